"""The geocoder's importer: OSM extracts → one SQLite index, on the importers' template
(common.importing). Nothing that serves imports this package; it writes what
`geo_service.store` reads.

    python -m geo_service.importing [--osm FILE ...] [--out DIR]
"""
