"""The route service's importer: OSM extracts → one routing dataset (OSRM's profiles,
Valhalla's tiles), on the importers' template (common.importing). Nothing that serves imports
this package; it reads the serving side's formats (valhalla_tiles).

    python -m route_service.importing --osm a.osm.pbf [--osm b.osm.pbf] --out var/maps
"""
