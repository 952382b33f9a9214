"""One typed vehicle table (common.vehicles): the API's vehicles are its rows, and no module
keeps a per-vehicle table of its own beside it (issue 31)."""

from __future__ import annotations

import re

from common.config import REPO_ROOT
from common.vehicles import MOTORIZED, VEHICLE_TABLE
from common.vocabulary import VEHICLES
from route_service.time_rules import ACCESS_KEYS

PACKAGES = ("auth_service", "common", "gateway", "geo_service", "job_service", "optimize_service", "route_service")
# A literal keyed or listing by every vehicle: a table that belongs in common/vehicles.py.
PER_VEHICLE_LITERAL = re.compile(r'"car"\s*:.*"truck"\s*:.*"bicycle"\s*:|\(\s*"car",\s*"truck",\s*"bicycle"')


def test_the_api_vehicles_are_the_tables_rows() -> None:
    assert VEHICLES == tuple(VEHICLE_TABLE) == ("car", "truck", "bicycle", "pedestrian")
    assert [name for name, row in VEHICLE_TABLE.items() if row.takes_dimensions] == ["truck"]
    assert MOTORIZED == ("car", "truck")


def test_the_rules_by_time_are_read_for_the_tables_access_keys() -> None:
    # every row's keys, each once, the most specific first as the rows list them
    assert ACCESS_KEYS == ("motorcar", "motor_vehicle", "vehicle", "access", "hgv", "goods", "bicycle", "foot")
    assert set(ACCESS_KEYS) == {key for row in VEHICLE_TABLE.values() for key in row.access_keys}


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
