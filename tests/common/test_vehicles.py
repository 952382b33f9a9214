"""One typed vehicle table (common.vehicles): the API's vehicles are its rows, and no module
keeps a per-vehicle table of its own beside it (issue 31)."""

from __future__ import annotations

import re

from common.config import REPO_ROOT
from common.vehicles import MOTORIZED, VEHICLE_TABLE
from common.vocabulary import VEHICLES
from route_service.graph_tags import access_value, base_speed

PACKAGES = ("auth_service", "common", "gateway", "geo_service", "job_service", "optimize_service", "route_service")
# A literal keyed or listing by every vehicle: a table that belongs in common/vehicles.py.
PER_VEHICLE_LITERAL = re.compile(r'"car"\s*:.*"truck"\s*:.*"bicycle"\s*:|\(\s*"car",\s*"truck",\s*"bicycle"')


def test_the_api_vehicles_are_the_tables_rows() -> None:
    assert VEHICLES == tuple(VEHICLE_TABLE) == ("car", "truck", "bicycle", "pedestrian")
    assert [name for name, row in VEHICLE_TABLE.items() if row.takes_dimensions] == ["truck"]
    assert MOTORIZED == ("car", "truck")


def test_the_graphs_tag_policy_reads_the_table() -> None:
    tags = {"highway": "primary", "maxspeed": "120", "motor_vehicle": "no", "hgv": "designated"}
    assert access_value(tags, "truck") == "designated" and access_value(tags, "car") == "no"
    # OSRM's 80 % of the posted 120, and the truck's own top speed below it.
    assert base_speed(tags, "car") == (96.0, False)
    assert base_speed(tags, "truck") == (VEHICLE_TABLE["truck"].max_kmh, False)


def test_no_module_keeps_its_own_per_vehicle_table() -> None:
    found = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for package in PACKAGES
        for path in (REPO_ROOT / package).rglob("*.py")
        if path.name != "vehicles.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PER_VEHICLE_LITERAL.search(line)
    ]
    assert found == []
