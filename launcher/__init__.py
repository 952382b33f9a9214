"""Starts the platform's processes: Redis, the services and the gateway (`make up`, tests)."""
