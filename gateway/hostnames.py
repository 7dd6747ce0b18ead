"""Host names and IP addresses as the config gives them: what can be listened on or connected to."""

from __future__ import annotations

import ipaddress
import re

# An RFC 1123 host name label: letters, digits and inner hyphens, 1-63 characters.
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
_NUMERIC = re.compile(r"[0-9.]+")
_WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def check_host(host: str) -> None:
    """Raise `ValueError` unless `host` is an IPv4 or IPv6 address or a valid host name.

    A dotted string of digits is read as IPv4 only: `192.168.1.300` is an error, not a host name
    (a resolver would pass it to DNS, and start-up or the first connection would fail much later).
    """
    if _NUMERIC.fullmatch(host) or ":" in host:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            kind = "IPv6" if ":" in host else "IPv4"
            raise ValueError(f"{host!r} is not a valid {kind} address") from None
        return
    name = host.removesuffix(".")
    if not name or len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError(f"{host!r} is neither an IP address nor a valid host name")


def is_loopback(host: str) -> bool:
    """Whether listening on `host` admits this machine only (a loopback address, or `localhost`)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def overlaps(a: str, b: str) -> bool:
    """Whether listeners on hosts `a` and `b` with one port would collide (the same, or one is a wildcard)."""
    return a == b or a in _WILDCARDS or b in _WILDCARDS
