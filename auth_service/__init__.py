"""The auth service: accounts, API keys, Ed25519 signing keys and JWT issuing.

It alone holds the private signing keys; everyone else verifies tokens with the public
keys it publishes at `/.well-known/jwks.json`.
"""
