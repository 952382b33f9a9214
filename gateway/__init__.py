"""The public entry point: verifies tokens, limits rates, forwards /v1 paths to services."""
