"""Snapping diagnostics on every shared extract and on all of them as one map: a failed point
is named (whichever end it is), with its distance to the nearest road, the map's bounds when
it lies outside, a hint when latitude and longitude look exchanged, and "cut off" when it
snapped onto a piece of road the rest of the network does not connect to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from common.errors import ApiError, NoRouteFound, PointNotRoutable
from common.geo import Bounds, LatLon, haversine_m
from route_service.dataset import Dataset
from route_service.diagnostics import SnapDiagnostics
from route_service.importing.importer import ImportResult
from route_service.model import EVERY_PROFILE, CostQuery, MatrixQuery, ProviderInfo, RouteQuery, Snapped, WaypointsQuery
from route_service.providers.diagnosing import diagnosing
from route_service.providers.osrm_provider import OsrmProvider
from route_service.providers.registry import ProviderRegistry, route_starts
from route_service.providers.valhalla_areas import TRIES, RouteStarts
from tests.ci_skips import skip_for_data
from tests.conftest import CUT_OFF_MAP, EVERY_MAP
from tests.route_service.osm_samples import dataset_road_nodes


@dataclass(frozen=True)
class Loaded:
    name: str
    dataset: Dataset
    registry: ProviderRegistry

    @property
    def diagnostics(self) -> SnapDiagnostics:
        assert self.registry.diagnostics is not None
        return self.registry.diagnostics

    @property
    def bounds(self) -> Bounds:
        assert self.dataset.bounds is not None, "the import records the map's bounds"
        return self.dataset.bounds

    def main_network(self) -> list[LatLon]:
        references = self.diagnostics.references("car", "fastest")
        assert len(references) >= 2, "the main network is found among the sampled road nodes"
        return references


@pytest.fixture(scope="module", params=EVERY_MAP)
def loaded(request: pytest.FixtureRequest, city_maps: Callable[[str], ImportResult]) -> Loaded:
    result = city_maps(request.param)
    dataset = Dataset(result.hash, result.path, result.record)
    return Loaded(request.param, dataset, ProviderRegistry.load(dataset))


def failure(call: Callable[[], object]) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value


def route(loaded: Loaded, origin: LatLon, destination: LatLon, provider: str = "osrm") -> ApiError:
    plugin = loaded.registry.providers[provider].route
    return failure(lambda: plugin(RouteQuery(origin, destination, steps=False)))


def outside(bounds: Bounds) -> LatLon:
    """Half a degree north of the map: no road of it within the snapping radius."""
    return LatLon(bounds.max_lat + 0.5, (bounds.min_lon + bounds.max_lon) / 2)


def test_a_point_outside_the_map_is_named_with_the_maps_bounds(loaded: Loaded) -> None:
    start = loaded.main_network()[0]
    error = route(loaded, start, outside(loaded.bounds))
    assert isinstance(error, PointNotRoutable)
    assert [v.parameter for v in error.violations] == ["to"]
    message = error.violations[0].message
    assert "no road usable by car within 1000 m" in message
    assert "(the nearest is" in message and "km away)" in message
    areas = loaded.dataset.areas
    # The five extracts as one map are five areas at least (Heidelberg's extract holds a second
    # cluster of roads 13 km west of the city's), never one box around them all.
    assert len(areas) >= (5 if loaded.name == "all" else 1), [a.describe() for a in areas]
    nearest = min(areas, key=lambda area: area.distance_m(outside(loaded.bounds)))
    if len(areas) == 1:
        assert f"The point lies outside the loaded map, which covers {nearest.describe()} (" in message
    else:
        assert f"The point lies outside the loaded map's {len(areas)} areas. The nearest, " in message, message
        assert f"covers {nearest.describe()} (GET /v1/providers lists them all)" in message
        assert loaded.bounds.describe() not in message


def test_exchanged_latitude_and_longitude_get_a_hint(loaded: Loaded) -> None:
    start = loaded.main_network()[0]
    error = route(loaded, LatLon(start.lon, start.lat), start)
    assert isinstance(error, PointNotRoutable)
    assert [v.parameter for v in error.violations] == ["from"]
    assert "were they given in the wrong order?" in error.violations[0].message
    assert f"({start.lat:.6f},{start.lon:.6f})" in error.violations[0].message


def test_no_exchange_hint_when_the_exchanged_point_is_no_nearer_a_road(loaded: Loaded) -> None:
    start = loaded.main_network()[0]
    error = route(loaded, start, outside(loaded.bounds))
    assert "wrong order" not in error.violations[0].message


def test_every_unroutable_point_is_reported_at_once(loaded: Loaded) -> None:
    far = outside(loaded.bounds)
    error = route(loaded, far, LatLon(far.lat + 0.01, far.lon))
    assert isinstance(error, PointNotRoutable)
    assert [v.parameter for v in error.violations] == ["from", "to"]
    # "; " separates violations in a problem's `detail`: a message never contains it
    assert error.detail.count("; ") == 1


def test_every_unroutable_source_and_destination_of_a_matrix_is_named(loaded: Loaded) -> None:
    good, far = loaded.main_network()[0], outside(loaded.bounds)
    matrix = loaded.registry.providers["osrm"].matrix
    assert matrix is not None
    error = failure(lambda: matrix(MatrixQuery([good, far], [far, good])))
    assert isinstance(error, PointNotRoutable)
    assert [v.parameter for v in error.violations] == ["sources[1]", "destinations[0]"]


def test_waypoints_and_costs_name_their_own_points(loaded: Loaded) -> None:
    a, b = loaded.main_network()[:2]
    far = outside(loaded.bounds)
    capabilities = loaded.registry.providers["osrm"]
    error = failure(lambda: capabilities.waypoints(WaypointsQuery([a, b, far, a])))
    assert [v.parameter for v in error.violations] == ["waypoints[2]"]
    error = failure(lambda: capabilities.cost(CostQuery([a, far, b], ["from", "via", "to"])))
    assert [v.parameter for v in error.violations] == ["via"]


def cut_off_point(loaded: Loaded, leaves: bool, reached: bool) -> LatLon | None:
    """A road node that car routes can leave (or not) and reach (or not), never both, if the
    map has one among 3000 sampled: judged against the main network of every area of the map
    (on all five merged, a point of Helsinki's network is in another area, not cut off)."""
    nodes = dataset_road_nodes(loaded.dataset.manifest, loaded.dataset.path)
    order = np.random.default_rng(7).permutation(len(nodes))[:3000]
    points = [LatLon(float(nodes[i, 0]), float(nodes[i, 1])) for i in order]
    references = [p for area in loaded.diagnostics.areas("car", "fastest") for p in area]
    roads = loaded.diagnostics.roads
    for first in range(0, len(points), 500):
        batch = points[first : first + 500]
        snapped = [roads.nearest_road("car", "fastest", p) for p in batch]
        near = [p for p, s in zip(batch, snapped, strict=True) if s is not None and s.distance_m < 5]
        out = roads.reachable("car", "fastest", near, references).any(axis=1)
        into = roads.reachable("car", "fastest", references, near).any(axis=0)
        wanted = np.flatnonzero((out == leaves) & (into == reached))
        if len(wanted):
            return near[int(wanted[0])]
    return None


@pytest.fixture(scope="module")
def made_map(city_maps: Callable[[str], ImportResult]) -> Loaded:
    """A map made to hold every case below, so that they are tested whatever the extracts hold."""
    result = city_maps(CUT_OFF_MAP)
    dataset = Dataset(result.hash, result.path, result.record)
    return Loaded(CUT_OFF_MAP, dataset, ProviderRegistry.load(dataset))


@pytest.mark.parametrize("provider", ["osrm", "valhalla"])
def test_the_point_on_a_cut_off_piece_is_blamed_whichever_end_it_is(loaded: Loaded, provider: str) -> None:
    cut = cut_off_point(loaded, leaves=False, reached=False)
    if cut is None:
        skip_for_data(f"no car road of {loaded.name} is cut off from its main network among 3000 sampled nodes")
    check_cut_off_blamed(loaded, cut, provider)


@pytest.mark.parametrize("provider", ["osrm", "valhalla"])
def test_the_cut_off_street_of_the_made_map_is_blamed(made_map: Loaded, provider: str) -> None:
    cut = cut_off_point(made_map, leaves=False, reached=False)
    assert cut is not None, "the made map's Island Street is cut off"
    check_cut_off_blamed(made_map, cut, provider)


def check_cut_off_blamed(loaded: Loaded, cut: LatLon, provider: str) -> None:
    start = loaded.main_network()[0]
    plugin = loaded.registry.providers[provider].route
    for origin, destination, blamed in ((cut, start, "from"), (start, cut, "to")):
        try:
            plugin(RouteQuery(origin, destination, steps=False))
        except ApiError as error:
            assert isinstance(error, NoRouteFound), error
            assert [v.parameter for v in error.violations] == [blamed], error.detail
            assert "cut off from the rest of the car network: no route leaves it or reaches it" in error.detail
        else:
            # Valhalla snaps onto the main network when a road of it lies within the radius.
            assert provider == "valhalla", f"OSRM routed from {origin} to {destination}"


def test_a_piece_that_can_be_left_but_not_reached_is_told_so(loaded: Loaded) -> None:
    cut = cut_off_point(loaded, leaves=True, reached=False)
    if cut is None:
        skip_for_data(f"no car road of {loaded.name} can be left but not reached among 3000 sampled nodes")
    check_left_not_reached(loaded, cut)


def test_the_exit_street_of_the_made_map_is_told_it_cannot_be_reached(made_map: Loaded) -> None:
    cut = cut_off_point(made_map, leaves=True, reached=False)
    assert cut is not None, "the made map's Exit Street is left by a one-way link only"
    check_left_not_reached(made_map, cut)


def check_left_not_reached(loaded: Loaded, cut: LatLon) -> None:
    start = loaded.main_network()[0]
    assert loaded.registry.providers["osrm"].route(RouteQuery(cut, start, steps=False)).routes
    error = route(loaded, start, cut)
    assert [v.parameter for v in error.violations] == ["to"], error.detail
    assert "routes leave it but none reaches it" in error.detail


def test_points_of_the_main_network_route_to_each_other(loaded: Loaded) -> None:
    """The references are what the diagnosis trusts: they must really be connected."""
    references = loaded.main_network()
    plugin = loaded.registry.providers["osrm"].route
    for a, b in pairwise(references):
        assert plugin(RouteQuery(a, b, steps=False)).routes


def test_a_dataset_without_samples_keeps_the_engines_error() -> None:
    """Without the import's coverage facts (an older import) nothing is guessed."""

    class NoRoads:
        def nearest_road(self, vehicle: str, route_type: str, point: LatLon) -> None:
            return None

        def reachable(
            self, vehicle: str, route_type: str, sources: list[LatLon], destinations: list[LatLon]
        ) -> np.ndarray:
            return np.zeros((len(sources), len(destinations)), dtype=bool)

        def info(self) -> ProviderInfo:
            return ProviderInfo("none", "no roads", EVERY_PROFILE)

    original = NoRouteFound("no car route connects the points", parameter="to")
    explained = SnapDiagnostics(NoRoads(), []).explain(original, [("from", LatLon(1, 1))], "car", "fastest")
    assert explained is original


def test_a_route_between_two_areas_of_a_merged_map_blames_the_other_area(
    city_maps: Callable[[str], ImportResult],
) -> None:
    """On all five extracts as one map, Helsinki's main network is an area of its own: a point on
    it is not "cut off" (it was, judged against Heidelberg's larger network), and a route from it
    to Heidelberg names `to` as lying in another area."""
    merged, helsinki, heidelberg = (registry_of(city_maps(name)) for name in ("all", "helsinki", "heidelberg"))
    assert merged.diagnostics is not None and helsinki.diagnostics is not None and heidelberg.diagnostics is not None
    origin = helsinki.diagnostics.references("car", "fastest")[0]
    destination = heidelberg.diagnostics.references("car", "fastest")[0]
    areas = merged.diagnostics.areas("car", "fastest")
    assert len(areas) >= 2, "Heidelberg's and Helsinki's networks are areas of the merged map"
    error = failure(lambda: merged.providers["osrm"].route(RouteQuery(origin, destination, steps=False)))
    assert isinstance(error, NoRouteFound), error
    assert [v.parameter for v in error.violations] == ["to"], error.detail
    assert "another area of the map than from" in error.detail and "cut off" not in error.detail
    # Both areas named: Heidelberg's (this point's) and Helsinki's (`from`'s).
    here = merged.diagnostics.area_of(destination)
    there = merged.diagnostics.area_of(origin)
    assert here is not None and there is not None and here != there
    assert f"it lies in the area covering {here.describe()}, from in the one covering {there.describe()}" in error.detail
    within = merged.providers["osrm"].route(
        RouteQuery(origin, helsinki.diagnostics.references("car", "fastest")[-1], steps=False)
    )
    assert within.routes


class TwoAreas:
    """Samples 0-2 reach each other, 3-4 reach each other, 5 reaches nothing; no area joins another."""

    groups = ({0, 1, 2}, {3, 4}, {5})

    def nearest_road(self, vehicle: str, route_type: str, point: LatLon) -> Snapped:
        return Snapped(point, 0.0, "")

    def reachable(self, vehicle: str, route_type: str, sources: list[LatLon], destinations: list[LatLon]) -> np.ndarray:
        def group(p: LatLon) -> int:
            return next(i for i, g in enumerate(self.groups) if int(p.lat) in g)

        return np.array([[group(s) == group(d) for d in destinations] for s in sources])

    def info(self) -> ProviderInfo:
        return ProviderInfo("two areas", "samples in groups", EVERY_PROFILE)


def test_areas_are_the_main_networks_that_several_samples_lie_on() -> None:
    samples = [LatLon(float(i), 0.0) for i in range(6)]
    areas = SnapDiagnostics(TwoAreas(), [], samples).areas("car", "fastest")
    assert [[int(p.lat) for p in area] for area in areas] == [[0, 1, 2], [3, 4]]


def registry_of(result: ImportResult) -> ProviderRegistry:
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))


def test_where_an_area_starts_its_failed_tries_are_not_diagnosed(
    city_maps: Callable[[str], ImportResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where an isochrone starts (registry.route_starts) OSRM's routes towards main networks are
    tried; one that fails (another area: no road joins them) is not explained: 11 ms a try
    against 0.2 ms on 30x Heidelberg, the isochrone's p50 1.76x 1x's (bench scale 2026-12-03)."""
    result = city_maps("all")
    dataset = Dataset(result.hash, result.path, result.record)
    osrm = OsrmProvider.load(dataset.path, dataset.manifest)
    diagnostics = SnapDiagnostics(osrm, dataset.areas, dataset.sample_points)
    explained: list[ApiError] = []
    explain = SnapDiagnostics.explain

    def counted(self: SnapDiagnostics, error: ApiError, *rest: Any) -> ApiError:
        explained.append(error)
        return explain(self, error, *rest)

    monkeypatch.setattr(SnapDiagnostics, "explain", counted)
    monaco = LatLon(43.7384, 7.4246)
    elsewhere = [area[0] for area in diagnostics.areas("car", "fastest") if haversine_m(area[0], monaco) > 100_000]
    assert len(elsewhere) >= TRIES, "the other extracts' main networks"
    starts = RouteStarts(route_starts(osrm, diagnostics).route, lambda _vehicle: elsewhere)
    assert starts(monaco, "car") == monaco and explained == []  # every try failed, none explained
    diagnosed = RouteStarts(diagnosing(osrm.plugins().route, diagnostics), lambda _vehicle: elsewhere)
    assert diagnosed(monaco, "car") == monaco and len(explained) == TRIES  # what the spy would see
