"""Geocoding providers behind one interface; `provider=<name>` picks one, `osm` is the default."""

from geo_service.providers.base import GeocodeProvider, ProviderRegistry
from geo_service.providers.osm import OsmIndexProvider

DEFAULT_PROVIDER = OsmIndexProvider.name

__all__ = ["DEFAULT_PROVIDER", "GeocodeProvider", "OsmIndexProvider", "ProviderRegistry"]
