"""The client's address: the connection's peer, or, behind a trusted proxy, the address the
proxies recorded in `X-Forwarded-For` (no I/O here).

Behind an Ingress every connection comes from the ingress controller, so the peer alone
would put every client under one per-address login limit. A client may send any
`X-Forwarded-For` it likes, so the header is read only when the peer is a configured proxy
(TRUSTED_PROXIES), and only from the right: each proxy appends the address it saw, so the
right-most address that is not a trusted proxy is the first one no client could forge.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_trusted_proxies(text: str) -> tuple[IPNetwork, ...]:
    """TRUSTED_PROXIES: addresses or CIDR blocks separated by commas (`10.0.0.0/8, ::1`)."""
    networks = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError as exc:
            raise SystemExit(f"configuration error: TRUSTED_PROXIES item {item!r} is not an address or CIDR") from exc
    return tuple(networks)


def _address(text: str) -> IPAddress | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # "[2001:db8::1]:443"
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # "203.0.113.7:51234"
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    # A dual-stack socket shows IPv4 peers as ::ffff:a.b.c.d; TRUSTED_PROXIES names them as IPv4.
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return mapped or address


class TrustedProxies:
    def __init__(self, networks: Sequence[IPNetwork] = ()) -> None:
        self.networks = tuple(networks)

    def trusts(self, address: IPAddress) -> bool:
        return any(address in network for network in self.networks)

    def client_address(self, peer: str | None, forwarded_for: Iterable[str]) -> str:
        """The peer, unless it is a trusted proxy: then the right-most address of the
        `X-Forwarded-For` values (all of them, in order) that is not a trusted proxy. If every
        address is trusted, the left-most; an entry that is not an address ends the walk at
        the last trusted hop (it was forged or broken before reaching our proxies)."""
        peer_address = _address(peer or "")
        if peer_address is None or not self.trusts(peer_address):
            return peer or ""
        hops = [hop for value in forwarded_for for hop in value.split(",") if hop.strip()]
        client = peer_address
        for hop in reversed(hops):
            address = _address(hop)
            if address is None:
                break
            client = address
            if not self.trusts(address):
                break
        return str(client)
