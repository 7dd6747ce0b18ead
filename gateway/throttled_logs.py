"""Log lines that an attacker or a failing peer could repeat without end, kept to a bounded rate.

`RateLimitedLog` says a recurring condition once per interval with how often it happened meanwhile;
`LogBudget` lets a burst of lines through per interval and counts the rest. Every listener, face and
the client core use them (a refused connection, a throttled client, a connect or disconnect line).
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)


class RateLimitedLog:
    """Logs a recurring condition once per `interval_s`, with how often it happened meanwhile."""

    def __init__(self, what: str, interval_s: float, level: int = logging.WARNING) -> None:
        self.what = what
        self.level = level
        self.interval_s = interval_s
        self._last = -float("inf")
        self._suppressed = 0

    def log(self, message: str, *args: object) -> bool:
        """Log now unless logged less than `interval_s` ago; return True when it logged."""
        now = time.monotonic()
        if now - self._last < self.interval_s:
            self._suppressed += 1
            return False
        suppressed, self._suppressed, self._last = self._suppressed, 0, now
        log.log(
            self.level,
            "%s (%d more like it since the last such line; logged at most once per %.0f s)",
            message % args,
            suppressed,
            self.interval_s,
            extra={"condition": self.what},
        )
        return True


class LogBudget:
    """Lets `burst` lines through per `interval_s`; the lines left out are counted in one line later.

    Connection lines ("client c7 connected") are worth having one by one, but a thousand
    reconnecting attackers would write them by the megabyte.
    """

    def __init__(self, what: str, burst: int, interval_s: float) -> None:
        self.what = what
        self.burst = burst
        self.interval_s = interval_s
        self._started = -float("inf")
        self._used = 0
        self._left_out = 0

    def log(self, logger: logging.Logger, message: str, *args: object) -> None:
        """Log `message` at INFO if the budget allows, else count it."""
        now = time.monotonic()
        if now - self._started >= self.interval_s:
            if self._left_out:
                logger.info(
                    "%d %s lines left out in %.0f s (at most %d per %.0f s are logged)",
                    self._left_out,
                    self.what,
                    now - self._started,
                    self.burst,
                    self.interval_s,
                )
            self._started, self._used, self._left_out = now, 0, 0
        if self._used >= self.burst:
            self._left_out += 1
            return
        self._used += 1
        logger.info(message, *args)


#: Every face's connect and disconnect lines share this budget.
CONNECTION_LINES = LogBudget("client connect/disconnect", 100, 10.0)
