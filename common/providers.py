"""The one rule for naming a provider in a request, in every service (geocoding, routing, stop
order): matched without case or surrounding spaces; blank is refused (omit the parameter for
the default provider); an unknown name is refused with the known ones listed."""

from __future__ import annotations

from collections.abc import Collection

from common.errors import ParameterErrors


def provider_name(raw: str) -> str:
    return raw.strip().lower()


def requested_provider(raw: str | None, known: Collection[str] | None, errors: ParameterErrors) -> str | None:
    """The provider the request names, or None when it names none (the default answers) or
    when the name is refused (the violation is added to `errors`). `known` None: the list is
    not available here, so any well-formed name passes (its owner checks it)."""
    if raw is None:
        return None
    name = provider_name(raw)
    if not name:
        errors.add("provider", "must not be blank (omit it for the default provider)")
        return None
    if known is not None and name not in known:
        shown = raw.strip()[:40]
        errors.add("provider", f"unknown provider {shown!r} (known: {', '.join(sorted(known))})")
        return None
    return name
