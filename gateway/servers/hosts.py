"""The names an HTTP listener answers to: a guard against DNS rebinding.

A web page on `evil.example` can rebind its name to 127.0.0.1; the browser then sends our own
listener requests (and WebSocket upgrades) with `Host: evil.example`, and the Origin check passes
because the page and the request share that name. So every HTTP request on every listener is first
checked against the names the gateway really has: IP literals (a rebinding attack needs a name),
`localhost` and `*.localhost`, the host's own names, and `server.allowed_hosts`.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from aiohttp.typedefs import Middleware

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


#: One label of a registered name (RFC 1123, and `_`, which some hostnames carry).
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_NAME = 253


def parse_host(host: str) -> str | None:
    """The name or address a Host header names, lower case, without the port and the IPv6 brackets.

    None when the header is not a well-formed `host[:port]` (RFC 9110 section 7.2): an IPv6 literal
    in brackets with nothing but a port after it, an IPv4 address, or a name of dot-separated
    labels; a port of 1-5 digits up to 65535. One trailing dot of a name is dropped. This is the
    one parser of Host headers: every listener's guard decides on what it returns.
    """
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        if end < 0 or not _port_ok(host[end + 1 :]):
            return None
        literal = host[1:end]
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            return None
        return literal
    name, colon, port = host.partition(":")
    if colon and not _port_ok(":" + port):
        return None
    name = name[:-1] if name.endswith(".") else name
    if not name or len(name) > _MAX_NAME or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return None
    return name


def _port_ok(rest: str) -> bool:
    """`rest` (what follows the host) is empty or `:` and a port number."""
    if not rest:
        return True
    digits = rest[1:]
    return rest[0] == ":" and 0 < len(digits) <= 5 and digits.isascii() and digits.isdigit() and int(digits) <= 65535


def split_host(host: str) -> str:
    """`parse_host(host)`, or the header as it is (lower case, trimmed) when malformed: for messages."""
    return parse_host(host) or host.strip().lower()


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def own_names() -> set[str]:
    """The host's own names: its hostname and its mDNS name (`<hostname>.local`).

    No resolver is asked (a broken one would stall start-up): other names go in `server.allowed_hosts`.
    """
    hostname = socket.gethostname().lower()
    return {hostname, hostname.split(".")[0] + ".local"} if hostname else set()


class HostPolicy:
    """Decides whether a Host header names this gateway; `*` in `allowed` lets every name in."""

    def __init__(self, allowed: Iterable[str], names: Iterable[str] | None = None) -> None:
        # Configured names may carry a port, and `.suffix` or `*`: not Host headers, so not parsed as one.
        self._allowed = {_configured(name) for name in allowed}
        self._any = "*" in self._allowed
        self._names = {*(own_names() if names is None else names), "localhost"}

    def allows(self, host: str | None) -> bool:
        """True when `host` (a Host header, None when absent) names this gateway."""
        if self._any:
            return True
        if not host:
            return False  # HTTP/1.1 requires Host; browsers always send it
        name = parse_host(host)
        if name is None:
            return False  # malformed: no browser sends it, and no rule below may read it loosely
        return (
            _is_ip_literal(name)
            or name in self._names
            or name in self._allowed
            or name.endswith(".localhost")
            or any(allowed.startswith(".") and name.endswith(allowed) for allowed in self._allowed)
        )


def _configured(name: str) -> str:
    """A `server.allowed_hosts` entry, lower case, without a port."""
    name = name.strip().lower()
    parsed = parse_host(name.lstrip("."))
    if parsed is None:
        return name
    return "." + parsed if name.startswith(".") else parsed


def host_guard(policy: HostPolicy) -> Middleware:
    """Aiohttp middleware answering 421 Misdirected Request to a Host that is not ours."""
    warned: set[str] = set()

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if not policy.allows(host):
            name = split_host(host or "")[:64]
            if name not in warned and len(warned) < 64:  # one line per name, never a flood
                warned.add(name)
                log.warning("refused a request for host %r (add it to server.allowed_hosts)", name)
            raise web.HTTPMisdirectedRequest(
                text=f"this gateway does not answer to host {name!r}; add it to server.allowed_hosts\n"
            )
        return await handler(request)

    return guard
