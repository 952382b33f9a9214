"""Polyline decoding: the reference example of the format, hostile strings, and OSRM's own
GeoJSON for the same routes as the oracle."""

from __future__ import annotations

import random

import orjson
import osrm
import pytest

from common.service import dump_json
from route_service.polyline import decode, point_count
from route_service.providers.osrm_provider import OsrmProvider
from tests.route_service.osm_samples import DENSE_BOX

# The example of Google's format description, precision 5.
GOOGLE_EXAMPLE = "_p~iF~ps|U_ulLnnqC_mqNvxq`@"
GOOGLE_POINTS = [[-120.2, 38.5], [-120.95, 40.7], [-126.453, 43.252]]


def test_decodes_the_reference_example_in_lon_lat_order() -> None:
    assert decode(GOOGLE_EXAMPLE, precision=5).tolist() == GOOGLE_POINTS
    assert point_count(GOOGLE_EXAMPLE) == 3


def test_empty_polyline_is_no_points() -> None:
    assert decode("").shape == (0, 2)
    assert point_count("") == 0


@pytest.mark.parametrize(
    "broken",
    [GOOGLE_EXAMPLE[:-1], GOOGLE_EXAMPLE[:4], "_p~iF~ps|U_ulL", "abc def", "\x00\x01", "é"],
)
def test_incomplete_or_foreign_strings_are_refused(broken: str) -> None:
    with pytest.raises(ValueError):
        decode(broken)


def test_output_serializes_as_plain_decimals() -> None:
    assert dump_json(decode(GOOGLE_EXAMPLE, precision=5)) == b"[[-120.2,38.5],[-120.95,40.7],[-126.453,43.252]]"


def test_equals_osrms_geojson_on_real_routes(osrm_hd: OsrmProvider) -> None:
    engine = osrm_hd._engine("car-fastest")
    rng = random.Random(7)
    lat0, lat1, lon0, lon1 = DENSE_BOX
    compared = 0
    for _ in range(40):
        points = [(rng.uniform(lon0, lon1), rng.uniform(lat0, lat1)) for _ in range(2)]
        answers = {}
        for geometries in ("geojson", "polyline6"):
            params = osrm.RouteParameters(
                coordinates=points, geometries=geometries, overview="full", radiuses=[1000, 1000]
            )
            try:
                answers[geometries] = engine.Route(params)["routes"][0]["geometry"]
            except RuntimeError:
                break
        if len(answers) < 2:
            continue
        expected = [[point[0], point[1]] for point in answers["geojson"]["coordinates"]]
        # Compared as JSON text: what a client receives, digit for digit.
        assert dump_json(decode(str(answers["polyline6"]))) == orjson.dumps(expected)
        compared += 1
    assert compared >= 30
