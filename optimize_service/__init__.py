"""The stop-order optimization service: POST /v1/optimize/stops (port 8084)."""
