"""Shared library of the routing platform: errors, config, logging, Redis, service client."""
