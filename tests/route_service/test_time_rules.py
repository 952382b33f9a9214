"""Conditional restrictions read and evaluated (route_service.time_rules): OSM's syntax, time
zones and public holidays of the way's country, limits on the vehicle, and what cannot be read."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import osmium
import pytest
from osmium.osm.mutable import Node, Way

from route_service.importing.valhalla_timed import write_timed_index
from route_service.time_rules import CAR_SIZE, Condition, TimeTable, parse_rules, split_outside_parentheses, tags_at
from route_service.timed_index import TimedIndex

HEIDELBERG = (49.4106, 8.7073)
HELSINKI = (60.1699, 24.9384)
BERLIN_TIME = ZoneInfo("Europe/Berlin")
OLD_TOWN = {"highway": "pedestrian", "name": "Hauptstraße", "motor_vehicle:conditional": "destination @ (Mo-Sa 06:00-11:00)"}


def at(text: str, zone: ZoneInfo = BERLIN_TIME) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=zone)


def test_parts_are_split_on_semicolons_outside_parentheses() -> None:
    text = "no @ (Mo-Fr 07:00-09:00; Sa 10:00-12:00); destination @ (19:00-06:00)"
    assert split_outside_parentheses(text, ";") == ["no @ (Mo-Fr 07:00-09:00; Sa 10:00-12:00)", "destination @ (19:00-06:00)"]


def test_a_time_rule_a_weight_rule_and_both_joined() -> None:
    parsed = parse_rules({
        "hgv:conditional": "no @ (19:00-6:00)",
        "access:conditional": "no @ (7:30-19:00 AND weight>7.5)",
        "maxspeed:conditional": "30 @ (22:00-06:00)",
    })  # fmt: skip
    by_key = {rule.key: rule for rule in parsed.rules}
    assert by_key["hgv"].value == "no" and by_key["hgv"].condition == Condition("19:00-6:00")
    assert by_key["access"].condition == Condition("7:30-19:00", (("weight", ">", 7.5),))
    assert by_key["maxspeed"].value == "30"
    assert parsed.not_about_time == [] and parsed.unparseable == []


def test_conditions_not_about_time_and_invalid_ones_are_counted_not_applied() -> None:
    parsed = parse_rules({
        "maxspeed:conditional": "80 @ wet",
        "motor_vehicle:conditional": "no @ (snow)",
        "access:conditional": "no @ (24 h)",
        "foot:conditional": "no",
    })  # fmt: skip
    assert parsed.rules == []
    assert sorted(parsed.not_about_time) == ["80 @ wet", "no @ (snow)"]
    assert sorted(parsed.unparseable) == ["no", "no @ (24 h)"]


def test_the_window_is_the_local_time_of_the_way() -> None:
    rule = parse_rules(OLD_TOWN).rules[0]
    table = TimeTable()
    assert table.holds(rule.condition, at("2026-12-01T08:00"), HEIDELBERG, CAR_SIZE)  # a Tuesday
    assert not table.holds(rule.condition, at("2026-12-01T12:00"), HEIDELBERG, CAR_SIZE)
    # 06:30 in Helsinki is 05:30 in Heidelberg: before the window
    assert not table.holds(rule.condition, at("2026-12-01T06:30", ZoneInfo("Europe/Helsinki")), HEIDELBERG, CAR_SIZE)
    assert not table.holds(rule.condition, at("2026-12-06T08:00"), HEIDELBERG, CAR_SIZE)  # a Sunday


def test_public_holidays_are_the_country_of_the_way() -> None:
    """3 October 2026, a Saturday, is German Unity Day: a holiday in Heidelberg, not in Helsinki;
    26 December (also a Saturday) is one in both. The calendars are the library's."""
    condition = Condition("Mo-Sa 06:00-11:00; PH off")
    table = TimeTable()
    helsinki_time = ZoneInfo("Europe/Helsinki")
    assert not table.holds(condition, at("2026-10-03T08:00"), HEIDELBERG, CAR_SIZE)
    assert table.holds(condition, at("2026-10-03T08:00", helsinki_time), HELSINKI, CAR_SIZE)
    assert not table.holds(condition, at("2026-12-26T08:00", helsinki_time), HELSINKI, CAR_SIZE)
    assert not table.holds(condition, at("2026-12-26T08:00"), HEIDELBERG, CAR_SIZE)
    assert table.holds(condition, at("2026-12-07T08:00", helsinki_time), HELSINKI, CAR_SIZE)


def test_the_next_change_of_a_window() -> None:
    rule = parse_rules(OLD_TOWN).rules[0]
    opening = TimeTable().next_change(rule.condition, at("2026-12-01T12:00"), HEIDELBERG)
    assert opening is not None and opening.isoformat().startswith("2026-12-02T06:00")
    closing = TimeTable().next_change(rule.condition, at("2026-12-01T08:00"), HEIDELBERG)
    assert closing is not None and closing.isoformat().startswith("2026-12-01T11:00")


def test_weight_limits_name_trucks_not_bicycles() -> None:
    condition = Condition("7:30-19:00", (("weight", ">", 7.5),))
    table = TimeTable()
    noon = at("2026-12-01T12:00")
    assert table.holds(condition, noon, HEIDELBERG, {"weight": 18.0})
    assert not table.holds(condition, noon, HEIDELBERG, {"weight": 7.5})
    assert not table.holds(condition, noon, HEIDELBERG, CAR_SIZE)
    assert not table.holds(condition, noon, HEIDELBERG, None)


@pytest.mark.parametrize(("hour", "inside"), [("08:00", True), ("12:00", False)])
def test_a_rule_that_holds_means_what_its_plain_tag_means(hour: str, inside: bool) -> None:
    """In the window the pedestrian street carries `motor_vehicle=destination` (open to cars for
    reaching a place inside); outside it is the plain pedestrian street, its tags untouched."""
    parsed = parse_rules(OLD_TOWN)
    table = TimeTable()
    holds = [table.holds(r.condition, at(f"2026-12-01T{hour}"), HEIDELBERG, CAR_SIZE) for r in parsed.rules]
    tags, applied = tags_at(OLD_TOWN, parsed.rules, holds)
    assert tags.get("motor_vehicle") == ("destination" if inside else None)
    assert tags["highway"] == "pedestrian"
    assert [rule.value for rule in applied] == (["destination"] if inside else [])


def test_of_several_rules_that_hold_the_last_wins() -> None:
    parsed = parse_rules({"maxspeed:conditional": "30 @ (22:00-06:00); 50 @ (05:00-06:00)"})
    holds = [True, True]
    tags, applied = tags_at({"maxspeed": "70"}, parsed.rules, holds)
    assert tags["maxspeed"] == "50" and [rule.value for rule in applied] == ["50"]


def test_a_time_with_a_plain_utc_offset_is_read() -> None:
    """Requests give offsets (`+01:00`), not zone names: the library wants a named zone."""
    from datetime import timedelta, timezone

    rule = parse_rules(OLD_TOWN).rules[0]
    plus_one = datetime(2026, 12, 1, 8, 0, tzinfo=timezone(timedelta(hours=1)))
    assert TimeTable().holds(rule.condition, plus_one, HEIDELBERG, CAR_SIZE)
    assert TimeTable().next_change(rule.condition, plus_one.replace(hour=12), HEIDELBERG) is not None


def test_the_timed_index_reads_the_rules_as_valhalla_applies_them(tmp_path: Path) -> None:
    """The map's timed ways (route_service.timed_index, built at import): a night truck ban
    closes to trucks only; a delivery window's road is closed outside it (Valhalla: opening
    rules of which none holds); `vehicle:conditional`, which Valhalla does not read, is not
    reported; and each road's next opening."""
    pbf = tmp_path / "timed.osm.pbf"
    writer = osmium.SimpleWriter(str(pbf))
    tags = {
        1: {"highway": "residential", "name": "Ban", "hgv:conditional": "no @ (19:00-6:00)"},
        2: {**OLD_TOWN},
        3: {"highway": "residential", "name": "Quiet", "vehicle:conditional": "no @ (00:00-24:00)"},
    }
    try:
        for ident in range(1, 7):
            writer.add_node(Node(id=ident, location=(HEIDELBERG[1] + 0.001 * ident, HEIDELBERG[0])))
        for way_id, way_tags in tags.items():
            writer.add_way(Way(id=way_id, nodes=[2 * way_id - 1, 2 * way_id], tags=way_tags))
    finally:
        writer.close()
    write_timed_index(pbf, tmp_path / "timed")
    index = TimedIndex.load(tmp_path / "timed")
    assert index is not None and len(index) == 3
    ban, old_town, quiet = (index.position(w) for w in (1, 2, 3))
    assert ban is not None and old_town is not None and quiet is not None
    evening, morning, noon = (at(f"2026-12-01T{hour}") for hour in ("20:00", "08:00", "14:00"))
    truck = index.at(ban, "truck", evening, None)
    assert truck.closed and [r.tag for r in truck.held] == ["hgv:conditional=no @ (19:00-6:00)"]
    assert not index.at(ban, "car", evening, None).closed
    assert index.next_opening(ban, "truck", evening, None) == at("2026-12-02T06:00")
    assert index.at(old_town, "car", noon, None).closed and not index.at(old_town, "car", morning, None).closed
    assert index.next_opening(old_town, "car", noon, None) == at("2026-12-02T06:00")
    assert not index.at(quiet, "car", noon, None).closed and index.at(quiet, "car", noon, None).held == []
    assert index.next_change(at("2026-12-01T10:00")) == at("2026-12-01T11:00")
    met = index.met("car", None, [(2, "", morning), (1, "", evening)])
    assert [(m.road, m.effect) for m in met] == [("Hauptstraße", "open to car only to reach a place inside (destination)")]
