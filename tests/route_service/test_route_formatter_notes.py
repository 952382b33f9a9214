"""A point moved far to reach a road is told so in the route's notes (issue 32, item 6)."""

from __future__ import annotations

from common.geo import LatLon
from route_service.formatter import MOVED_NOTE_M, moved_notes
from route_service.model import Snapped


def test_a_point_moved_more_than_the_threshold_gets_a_note() -> None:
    near = Snapped(LatLon(60.1699, 24.9384), MOVED_NOTE_M - 1, "Mannerheimintie")
    far = Snapped(LatLon(60.1675, 24.9310), 267.4, "Fredrikinkatu")
    notes = moved_notes([("from", near), ("to", far)], "car")
    assert notes == ["to: the point lies 267 m from the nearest road usable by car (Fredrikinkatu), where the route ends"]
    assert moved_notes([("from", Snapped(LatLon(0, 0), 855.0, ""))], "truck") == [
        "from: the point lies 855 m from the nearest road usable by truck, where the route starts"
    ]
