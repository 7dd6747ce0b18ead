"""Connection admission shared by every listener: caps in all and per peer, and a budget of partial bytes.

Every accepted socket (WebSocket, HTTP, msgpack TCP and Unix) takes a `Ticket` before it may cost
the gateway anything; a refused one is closed at once with a reason. The open-file limit is raised
to its hard limit at start, and the cap is kept below it so that devices, log files and `/healthz`
always find a descriptor.
"""

from __future__ import annotations

import logging
import resource
from collections import Counter

from gateway.core.config import ServerConfig
from gateway.memory import release_soon
from gateway.throttled_logs import RateLimitedLog

log = logging.getLogger(__name__)

#: Connections beyond the cap that the HTTP listener still takes, to answer `/healthz` (and 503).
HTTP_RESERVE = 16

#: Connections the kernel holds for each listener until it accepts them (every face's listeners pass
#: it). asyncio's default of 100 overflowed when 250 clients connected at once: the kernel dropped the
#: rest's SYNs and each tried again a second later, so a storm took a second more (issue 42). The
#: kernel caps it at net.core.somaxconn (4096 on Linux since 5.4).
LISTEN_BACKLOG = 1024


def raise_open_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as error:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, hard, error)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


#: A connection that ends holding this much of an unfinished request has the heap trimmed after it.
LARGE_PARTIAL_BYTES = 64 * 1024


class Refused(Exception):
    """A connection the limits do not admit; the message says which limit and how to change it."""


class Ticket:
    """One admitted connection: its share of the caps and of the partial-bytes budget."""

    def __init__(self, limits: ConnectionLimits, peer: str | None) -> None:
        self._limits = limits
        self.peer = peer
        #: Admitted past the cap, into the HTTP reserve: plain HTTP only (no WebSocket).
        self.reserve = limits.connections > limits.max_clients
        self.partial = 0
        self._released = False

    def hold_partial(self, size: int) -> bool:
        """Record that this connection now holds `size` bytes of an unfinished request.

        Return False when all connections together would hold more than `max_partial_bytes`;
        the caller then closes this connection.
        """
        limits = self._limits
        total = limits.partial_bytes - self.partial + size
        if size > self.partial and total > limits.max_partial_bytes:
            return False
        limits.partial_bytes = total
        self.partial = size
        return True

    def release(self) -> None:
        """The connection is closed."""
        if self._released:
            return
        self._released = True
        if self.partial >= LARGE_PARTIAL_BYTES:
            release_soon()
        self.hold_partial(0)
        self._limits.drop(self)


class ConnectionLimits:
    """Counts connections in all and per peer address, and the bytes of unfinished requests."""

    def __init__(self, server: ServerConfig, open_files: int) -> None:
        #: The connection cap in force: `max_clients`, or less when the open-file limit is lower.
        self.max_clients = max(1, min(server.max_clients, open_files - server.fd_reserve - HTTP_RESERVE))
        self.max_per_peer = min(server.max_clients_per_peer, self.max_clients)
        self.max_partial_bytes = server.max_partial_bytes
        self.partial_bytes = 0
        self.connections = 0
        self.refused = 0
        self._per_peer: Counter[str] = Counter()
        self._exhaustion = RateLimitedLog("resource exhaustion", 10.0)
        if self.max_clients < server.max_clients:
            log.warning(
                "open-file limit %d allows only %d of server.max_clients = %d (raise LimitNOFILE)",
                open_files,
                self.max_clients,
                server.max_clients,
            )

    def admit(self, peer: str | None, reserve: int = 0) -> Ticket:
        """A ticket for a new connection from `peer` (an IP address; None for a Unix socket), or `Refused`.

        `reserve` more connections are admitted past the cap (for `/healthz` on the HTTP port).
        """
        if self.connections >= self.max_clients + reserve:
            self._refuse(f"too many clients: {self.connections} connected (server.max_clients = {self.max_clients})")
        if peer is not None and self._per_peer[peer] >= self.max_per_peer:
            self._refuse(
                f"too many clients from {peer}: {self._per_peer[peer]} connected "
                f"(server.max_clients_per_peer = {self.max_per_peer})"
            )
        self.connections += 1
        if peer is not None:
            self._per_peer[peer] += 1
        return Ticket(self, peer)

    def drop(self, ticket: Ticket) -> None:
        """Forget a released ticket."""
        self.connections -= 1
        if ticket.peer is not None:
            self._per_peer[ticket.peer] -= 1
            if self._per_peer[ticket.peer] <= 0:
                del self._per_peer[ticket.peer]

    def _refuse(self, reason: str) -> None:
        self.refused += 1
        self._exhaustion.log("refusing connections: %s", reason)
        raise Refused(reason)
