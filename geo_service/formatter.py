"""Results → one-line labels and the JSON shape of the API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from common.osm_inputs import ATTRIBUTION
from geo_service.batch import LineAnswer, LineError
from geo_service.model import GeocodeResult, Note, ResultAddress, match_level

# Countries that write the house number before the street ("12 Avenue de la Costa").
NUMBER_FIRST = frozenset({"FRA", "MCO", "BEL", "LUX", "USA", "CAN", "GBR", "IRL", "AUS", "NZL"})


def street_line(address: ResultAddress) -> str | None:
    if not address.street:
        return None
    if not address.house_number:
        return address.street
    if address.country in NUMBER_FIRST:
        return f"{address.house_number} {address.street}"
    return f"{address.street} {address.house_number}"


def label(address: ResultAddress, name: str | None = None) -> str:
    """'Marienplatz 8, 80331 München'; a POI or place is led by its own name."""
    town = " ".join(p for p in (address.postcode, address.city) if p)
    parts = [name, street_line(address), town]
    seen: list[str] = []
    for part in parts:
        if part and part not in seen:
            seen.append(part)
    return ", ".join(seen) or (address.country or "")


def result_json(result: GeocodeResult) -> dict[str, Any]:
    address = result.address
    body: dict[str, Any] = {
        "coordinate": {"lat": round(result.lat, 7), "lon": round(result.lon, 7)},
        "address": {
            "street": address.street,
            "houseNumber": address.house_number,
            "postalCode": address.postcode,
            "city": address.city,
            "country": address.country,
        },
        "label": label(address, result.name),
        "type": result.type,
        "matchLevel": match_level(result),
        "score": round(result.score, 3),
    }
    if result.name:
        body["name"] = result.name
    if result.category:
        body["category"] = result.category
    if result.distance_m is not None:
        body["distance"] = round(result.distance_m, 1)
    if result.interpolated:
        body["interpolated"] = True
    return body


def response_json(results: list[GeocodeResult], provider: str, notes: Sequence[Note] = (),
                  language: str | None = None) -> dict[str, Any]:  # fmt: skip
    """`language`: the one the names were asked in (issue 35), said in the answer."""
    body: dict[str, Any] = {"results": [result_json(r) for r in results], "provider": provider}
    if language is not None:
        body["language"] = language
    if notes:
        body["notes"] = [{"code": n.code, "message": n.message} for n in notes]
    return body


def batch_json(answers: Sequence[LineAnswer], provider: str) -> dict[str, Any]:
    """One entry per data line, in the batch's order: the line's geocoder answer or its error;
    `summary.linesRead == answered + failed` always holds."""
    failed = sum(isinstance(answer, LineError) for answer in answers)
    return {
        "summary": {"linesRead": len(answers), "answered": len(answers) - failed, "failed": failed},
        "results": [batch_line_json(answer) for answer in answers],
        "provider": provider,
        "attribution": ATTRIBUTION,
    }


def batch_line_json(answer: LineAnswer) -> dict[str, Any]:
    if isinstance(answer, LineError):
        error = {"code": answer.code, "message": answer.message, "violations": answer.violations}
        return {"line": answer.line, "id": answer.id, "error": error}
    answered = {key: value for key, value in answer.body.items() if key != "provider"}  # the batch's
    return {"line": answer.line, "id": answer.source.id, "kind": str(answer.source.kind), **answered}
