"""One notion of the client's address, for every rate limit (the API's, logins, sign-up,
password resets).

The address is the TCP peer's (``REMOTE_ADDR``) unless that peer is one of ``TRUSTED_PROXIES``
(addresses or networks; none by default). Only then is ``X-Forwarded-For`` read, from its right
end, where each trusted proxy appended the peer it saw: the first address that is not a trusted
proxy is the client. Anything to its left was written by the client and is never believed, so a
forged header changes nothing, with or without a proxy in front.
"""
import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# A longer chain than this is not a real proxy chain; reading it all would only cost time.
MAX_FORWARDED_HOPS = 20


@lru_cache(maxsize=16)
def trusted_networks(entries: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    """The networks of TRUSTED_PROXIES (``10.0.0.5``, ``10.0.0.0/8``, ``fd00::/8``)."""
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def parse_address(text: str) -> IPAddress | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    # An IPv4 client seen through an IPv6 socket (::ffff:1.2.3.4) is the same client.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_trusted(address: IPAddress, networks: tuple[IPNetwork, ...]) -> bool:
    return any(address in network for network in networks)


def client_ip(request: HttpRequest) -> IPAddress | None:
    """The client's address (see the module's text); None when the peer has no IP address."""
    peer = parse_address(request.META.get("REMOTE_ADDR") or "")
    networks = trusted_networks(tuple(settings.TRUSTED_PROXIES))
    if peer is None or not networks:
        return peer
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR") or ""
    hops = forwarded.split(",")[-MAX_FORWARDED_HOPS:] if forwarded else []
    address = peer
    while hops and is_trusted(address, networks):
        hop = parse_address(hops.pop())
        if hop is None:
            # A trusted proxy passed on something that is no address: stop at that proxy rather
            # than believe what lies further left.
            break
        address = hop
    return address


def client_address(request: HttpRequest) -> str:
    """The client's address as text (``unknown`` when the peer has none, e.g. a Unix socket)."""
    address = client_ip(request)
    return str(address) if address is not None else "unknown"


def client_key(request: HttpRequest) -> str:
    """What rate limits count a client by: its IPv4 address, or the /64 network of an IPv6
    address, since one IPv6 host is given a whole /64 and could spend a budget per address."""
    address = client_ip(request)
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
