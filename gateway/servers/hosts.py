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
import socket
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from aiohttp.typedefs import Middleware

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def split_host(host: str) -> str:
    """The name or address of a Host header, without the port and the IPv6 brackets, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, _, port = host.rpartition(":")
    return name if name and port.isdigit() else host


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
        self._allowed = {split_host(name) for name in allowed}
        self._any = "*" in self._allowed
        self._names = {*(own_names() if names is None else names), "localhost"}

    def allows(self, host: str | None) -> bool:
        """True when `host` (a Host header, None when absent) names this gateway."""
        if self._any:
            return True
        if not host:
            return False  # HTTP/1.1 requires Host; browsers always send it
        name = split_host(host)
        return (
            _is_ip_literal(name)
            or name in self._names
            or name in self._allowed
            or name.endswith(".localhost")
            or any(allowed.startswith(".") and name.endswith(allowed) for allowed in self._allowed)
        )


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
