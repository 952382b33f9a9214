"""Shared library of the routing platform: errors and their formats, config, logging, Redis,
service client, geometry (`geo`) and the routing vocabulary (vehicles, route types)."""
