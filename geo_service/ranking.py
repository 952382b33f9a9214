"""Candidates found → scored results → the answer's order, with nothing read from the store.

A street candidate with a house number asked becomes its address (exact number, then the same
number with another suffix); without one it stays a street, with a lower score. Places and POIs
compete on their names. Postcode agreement adjusts every score; a kind of place asked brings its
POIs, nearest first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from rapidfuzz import fuzz

from geo_service.analysis import Reading
from geo_service.candidates import KIND_DISTANCE_M, KindFound, Member, Streets
from geo_service.formatter import label
from geo_service.lexicon import Lexicon
from geo_service.model import GeocodeResult, ResultAddress
from geo_service.parser import HouseNumber, ParsedQuery
from geo_service.records import Address
from geo_service.similarity import CITY_MATCH, Candidate
from geo_service.store import NameRow, PostcodeArea

Scored = tuple[GeocodeResult, float]  # a result and its importance (which breaks ties)
# A name asked a letter off (not a prefix or a part) with neither a house number nor a postcode
# is only answered from this score (name similarity times city agreement): nothing else in the
# text vouches for it, and a name of another map one letter off a name here ("Fonum" for Forum,
# "Rheinstraße" for Weinstraße, "Cafe Artisan" for Cafe Aran) reads the same. Measured with
# bench/geocoder_places.py (names of the other extracts, per map and on the merged map "all"):
# 0.8 left 2.5 % answered on Munich and 4.5 % on "all", 0.85 2.0 % and 3.5 %; the cost is typos
# of a name asked alone (a POI's or place's name of those cases with bench/geocoder.py's one
# typo, 646 asked): 95.4 % found with no such floor, 94.0 % at 0.8, 87.3 % at 0.85. Addresses keep
# theirs: bench/geocoder.py's typo cases carry a number (1114/1126 found either way).
ALONE_TYPO_SCORE = 0.85
# Below this a result is more likely wrong than right: answer nothing. Measured (bench/geocoder.py,
# five extracts in one index): no correct top answer scored under 0.6, and nonsense such as
# "jukexegasse 41, rituna" (two letters off Junkergasse, town unknown) scored 0.51.
MIN_SCORE = 0.6
# Score factors: an exact address beats a near one beats the street beats the town.
ADDRESS_EXACT = 1.0
ADDRESS_OTHER_SUFFIX = 0.9
STREET_WITHOUT_NUMBER = 0.95
STREET_NUMBER_UNKNOWN = 0.75
# A place named as asked wins over a POI of the same name ("Helsinki", the city, not the railway
# station called so): bench/geocoder_places.py's place names went 71-95 % -> 98-100 % with 0.94
# for 0.92, one POI of 495 lost to its town's place (docs/decisions.md).
PLACE_ALONE = 0.94
PLACE_WITH_NUMBER = 0.6
POI_ALONE = 0.93
POI_WITH_OTHER_NUMBER = 0.6
# A POI of the kind asked ("Apotheke Heidelberg"): below every name matched exactly (a place
# asked without a city: PLACE_ALONE * NO_CITY_GIVEN = 0.892, "Centrum" in Helsinki), nearer ones
# first (up to 5 % less over 10 km). In a kind query other names count only from NAMED_AS_ASKED.
KIND_MATCH = 0.88
KIND_DISTANCE_SHARE = 0.05
NAMED_AS_ASKED = 0.89
# A POI of the kind asked whose name holds the kind's word ("Löwen-Apotheke" for "Apotheke"): the
# first of its kind, still below names matched exactly. bench/geocoder_places.py, parts of a name
# that are also a kind's word ("Optikko", "Kukkakauppa", "Perruqueria"): see docs/decisions.md.
KIND_NAMED = 0.885
# One of another kind after every POI of the kind (kind_score's least is 0.836).
OTHER_KIND_NAMED = 0.83
# A name that is the whole text, exactly (no number, no postcode beside it), outranks a reading that
# splits the text into a name and its town: "Monaco-Monte-Carlo" is the station so named, not the
# district Monte-Carlo in Monaco. In place of NO_CITY_GIVEN: a POI so named then outranks a street
# with its town (0.93 * 1.03 > 0.95), and places, streets and POIs so named keep their order.
# bench/geocoder_places.py and the address benchmark: see docs/decisions.md.
WHOLE_TEXT_NAME = 1.03
POSTCODE_MISMATCH = 0.85
POSTCODE_UNKNOWN = 0.95


def results(candidates: Sequence[Candidate], parsed: ParsedQuery, streets: Streets) -> list[Scored]:
    number = parsed.house_number
    out: list[Scored] = []
    alone = number is None and parsed.postcode is None
    for candidate in candidates:
        city_factor = WHOLE_TEXT_NAME if alone and candidate.whole_text else candidate.city_factor
        base = candidate.similarity * city_factor
        row = candidate.row
        if candidate.names_else and (row.kind != "place" or number is None):
            continue  # the text names something else (COMMON_WORD_SHARE)
        if candidate.typo and alone and base < ALONE_TYPO_SCORE:
            continue  # a name a letter off, and nothing else asked to vouch for it
        postcode = parsed.postcode
        if row.kind == "street":
            out += street_results(row, base, number, streets, postcode)
        elif row.kind == "place":
            # With a house number the other words are a street we did not find: the town is
            # the fallback, at a fixed lower score, whatever those words were.
            factor = PLACE_ALONE * city_factor if number is None else PLACE_WITH_NUMBER
            out.append((name_result(row, candidate.similarity * factor * postcode_factor(postcode, row.postcode, *row.postcodes)), row.importance))
        else:
            factor = POI_ALONE if number is None or same_number(row.house_number, number) else POI_WITH_OTHER_NUMBER
            out.append((name_result(row, base * factor * postcode_factor(postcode, row.postcode, *row.postcodes)), row.importance))
    return out


def street_results(row: NameRow, base: float, number: HouseNumber | None, streets: Streets, postcode: str | None) -> list[Scored]:
    """The street's addresses with the number, on each street of its group; the street itself
    when one of them has no such number (the most important one: they read alike)."""
    if number is None:
        return [(name_result(row, base * STREET_WITHOUT_NUMBER * postcode_factor(postcode, row.postcode, *row.postcodes)), row.importance)]
    found: list[Scored] = []
    without: int | None = None
    members: list[Member] = streets.members.get(row.id, [(row.id, row.importance)])
    for member, importance in members:
        on_it = streets.addresses.get(member, [])
        exact = [a for a in on_it if a.house_key == number.text]
        chosen, factor = (exact, ADDRESS_EXACT) if exact else (on_it, ADDRESS_OTHER_SUFFIX)
        if not chosen and without is None:
            without = member
        for address in chosen:
            factor_here = factor * (0.99 if address.interpolated else 1.0)
            found.append((address_result(address, base * factor_here * postcode_factor(postcode, address.postcode)), importance))
    if without is not None:
        street = streets.rows[without]
        score = base * STREET_NUMBER_UNKNOWN * postcode_factor(postcode, street.postcode, *street.postcodes)
        found.append((name_result(street, score), street.importance))
    return found


def postcode_factor(asked: str | None, *carried: str | None) -> float:
    """How a postcode asked agrees with those an object carries (1 when none is asked)."""
    if asked is None:
        return 1.0
    known = {p.lower() for p in carried if p}
    if not known:
        return POSTCODE_UNKNOWN
    return 1.0 if asked in known else POSTCODE_MISMATCH


def same_number(tagged: str | None, number: HouseNumber) -> bool:
    return bool(tagged) and tagged.lower().replace(" ", "") == number.text  # type: ignore[union-attr]


def name_result(row: NameRow, score: float) -> GeocodeResult:
    if row.kind == "street":
        address = ResultAddress(street=row.name, postcode=row.postcode, city=row.city, country=row.country)
        return GeocodeResult(row.lat, row.lon, address, "street", score)
    address = ResultAddress(
        street=row.street, house_number=row.house_number, postcode=row.postcode, city=row.city, country=row.country
    )
    kind = "place" if row.kind == "place" else "poi"
    return GeocodeResult(row.lat, row.lon, address, kind, score, name=row.name, category=row.category)


def address_result(row: Address, score: float) -> GeocodeResult:
    address = ResultAddress(row.street, row.house_number, row.postcode, row.city, row.country)
    return GeocodeResult(row.lat, row.lon, address, "address", score, interpolated=row.interpolated)


def postcode_result(area: PostcodeArea, score: float) -> Scored:
    """The postcode's area: the centre of its addresses, with the postcode in the answer."""
    address = ResultAddress(postcode=area.postcode, city=area.city, country=area.country)
    return GeocodeResult(area.lat, area.lon, address, "place", score, category="postcode"), 1.0


def postcode_of_city(reading: Reading, areas: list[PostcodeArea], lexicon: Lexicon) -> list[Scored]:
    """"80331 München", "AD300 Llorts": when the words are just a town the postcode's objects
    name, the postcode's area there (above the town itself, which would drop the postcode).
    Words that also name a street are not the town alone (token_sort_ratio), so an address's
    street keeps its rank."""
    asked = " ".join(reading.words)
    covered = [(fuzz.token_sort_ratio(asked, lexicon.city_key(a.city)) / 100.0, a) for a in areas if a.city]
    covers, area = max(covered, key=lambda pair: pair[0], default=(0.0, None))
    return [postcode_result(area, PLACE_ALONE * covers)] if area is not None and covers >= CITY_MATCH else []


def kind_score(metres: float) -> float:
    """A POI of the asked kind: KIND_MATCH, less up to KIND_DISTANCE_SHARE with its distance
    (over KIND_DISTANCE_M), so the nearest come first."""
    return KIND_MATCH * (1.0 - KIND_DISTANCE_SHARE * min(1.0, metres / KIND_DISTANCE_M))


def with_kind(kind: KindFound, found: list[Scored], alone: bool, lexicon: Lexicon) -> list[Scored]:
    """Places of the kind, and names matched as asked ("Marktplatz Heidelberg", the square;
    "Centrum", a Helsinki district), not a name that merely resembles the kind's word
    ("Apothekergasse" for "Apotheke Heidelberg"). The kind `alone` (no town, no point: its
    POIs in no order of place) is also a name's part: a POI of the kind whose name holds the
    kind's word comes first (KIND_NAMED: "Optikko" is the optician "Optikko Kaisla"), and one
    of another kind after the kind's (OTHER_KIND_NAMED), so it is the answer where the map
    has none of the kind ("Pastissería": the bar "Granja Pastissería Xocolatí")."""
    words = kind.words

    def of_kind_there(result: GeocodeResult) -> bool:
        """Of the kind asked, in the place asked if one was ("Apotheke Heidelberg" is no
        Bio-Apotheke in Munich, whose name holds the word)."""
        of_kind = result.type == "poi" and result.category in words.categories
        return of_kind and (not words.rest or lexicon.city_key(result.address.city) == words.rest)

    kept = []
    for result, importance in found:
        holds = alone and bool(result.name) and f" {words.kind} " in f" {result_key(result, lexicon)} "
        if holds and of_kind_there(result):
            kept.append((replace(result, score=max(result.score, KIND_NAMED)), importance))
        elif result.score >= NAMED_AS_ASKED or of_kind_there(result):
            kept.append((result, importance))
        elif holds:
            kept.append((replace(result, score=min(result.score, OTHER_KIND_NAMED)), importance))
    pois = [(name_result(p, KIND_MATCH if metres is None else kind_score(metres)), p.importance) for p, metres in kind.pois]
    return kept + pois


def city_explains(reading: Reading, result: GeocodeResult, lexicon: Lexicon) -> bool:
    """Whether a result's name or town holds the country's words its reading keeps as written."""
    return reading.explained_by(result_key(result, lexicon), lexicon.city_key(result.address.city))


def result_key(result: GeocodeResult, lexicon: Lexicon) -> str:
    """The normalized name a result was found by (a street's, for an address)."""
    return lexicon.normalizer.key(result.name or result.address.street or "")


def rank(found: Iterable[Scored], limit: int) -> list[GeocodeResult]:
    """Best score first (importance breaks ties); the same label once, at its best."""
    ordered = sorted((p for p in found if p[0].score >= MIN_SCORE), key=lambda p: (-round(p[0].score, 6), -p[1]))
    return distinct([result for result, _ in ordered], limit)


def distinct(ordered: Iterable[GeocodeResult], limit: int) -> list[GeocodeResult]:
    """The first `limit` results, the same label once (at its best), scores within 0..1."""
    seen: set[tuple[str, str]] = set()
    out = []
    for result in ordered:
        identity = (result.type, label(result.address, result.name))
        if identity in seen:
            continue
        seen.add(identity)
        out.append(GeocodeResult(**{**result.__dict__, "score": min(1.0, max(0.0, result.score))}))
        if len(out) == limit:
            break
    return out
