"""Geocoding service: OSM addresses, streets, places and POIs in an embedded SQLite index."""
