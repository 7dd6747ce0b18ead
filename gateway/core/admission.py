"""Admission: what one client may cost the gateway, whatever face it speaks. One object per client.

Every face calls the same rules, so a face cannot forget one:
- **request rate**: `admit()` spends one request of a token bucket (`server.max_requests_per_s`,
  bursts of `server.request_burst`) and raises `RateLimited` when it is spent;
- **refusal budget**: each refused request or undecodable frame spends `refuse()` *before* any other
  work; past `server.refusal_burst` of them (refilled at `max_requests_per_s`) the face closes the
  client instead of answering it thousands of times a second;
- **auth deadline**: a client that has not authenticated (or, on a face with a handshake, not
  handshaken) within `server.auth_timeout_s` of connecting is closed;
- **log limit**: refusals are logged through `REFUSALS_LOG`, at most one line per interval.

`estop` bypasses all of it: a face never calls `admit` or `refuse` for an emergency stop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from gateway.core.config import ServerConfig
from gateway.errors import ErrorCode, RateLimited
from gateway.throttled_logs import RateLimitedLog

#: Refused requests and the clients closed for them, on every face: one line per interval at most.
REFUSALS_LOG = RateLimitedLog("refused requests", 10.0, logging.INFO)
#: The `close` reason of a client that did not authenticate in time ({} is server.auth_timeout_s).
AUTH_TIMEOUT_REASON = "not authenticated within {:g} s (server.auth_timeout_s)"


class TokenBucket:
    """Allows `rate` requests per second on average, and bursts of up to `burst`."""

    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._updated = time.monotonic()

    def take(self) -> bool:
        """Spend one token if there is one."""
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._rate)
        self._updated = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


class Admission:
    """One client's request rate, refusal budget and auth deadline (see the module docstring)."""

    def __init__(self, server: ServerConfig) -> None:
        self._server = server
        self._requests = TokenBucket(server.max_requests_per_s, server.request_burst)
        self._refusals = TokenBucket(server.max_requests_per_s, server.refusal_burst)
        #: True once the refusal budget is spent: the face stops reading and closes the client.
        self.refused_out = False
        #: `time.monotonic()` by which the client must authenticate (None: no deadline configured).
        self.auth_deadline: float | None = time.monotonic() + server.auth_timeout_s if server.auth_timeout_s else None

    def admit(self) -> None:
        """Spend one request of the budget; raise `RateLimited` when it is spent."""
        if not self._requests.take():
            raise RateLimited(f"more than {self._server.max_requests_per_s:g} requests per second; slow down")

    def refuse(self) -> bool:
        """Count one refused request or bad frame: True to answer it, False once the budget is spent (close)."""
        if self.refused_out:
            return False
        if self._refusals.take():
            return True
        self.refused_out = True
        return False

    async def refused(
        self,
        client_id: str,
        message: str,
        answer: Callable[[], None],
        close: Callable[[ErrorCode, str], Awaitable[None]],
    ) -> None:
        """A request or frame was refused with `message`: `answer()` it, or `close` once the budget is spent.

        Faces call this for every refusal before doing anything else with it, so a client sending
        nothing but garbage costs at most `refusal_burst` answers, then its connection.
        """
        if self.refuse():
            answer()
            return
        REFUSALS_LOG.log("closing client %s: it keeps sending requests that are refused", client_id)
        await close(ErrorCode.RATE_LIMITED, self.refused_out_reason(message))

    def refused_out_reason(self, last: str) -> str:
        """The close reason once the budget is spent; `last` is the last refusal's message."""
        server = self._server
        return (
            f"more than {server.refusal_burst} refused requests, then {server.max_requests_per_s:g} a second "
            "(server.refusal_burst, server.max_requests_per_s); last: " + last[:200]
        )

    def auth_left(self) -> float | None:
        """Seconds left before the auth deadline (0 when past; None when there is none)."""
        if self.auth_deadline is None:
            return None
        return max(self.auth_deadline - time.monotonic(), 0.0)

    @property
    def auth_timeout_reason(self) -> str:
        """The close reason of a client past its auth deadline."""
        return AUTH_TIMEOUT_REASON.format(self._server.auth_timeout_s)
