"""Throttling of token guesses, per source address, whatever face the guesses come through.

Every attempt from an address that has failed before waits first (0.25 s after one failure, doubling
to 8 s), and attempts from one address are taken one at a time, so opening more connections does not
guess faster. A connection that fails `MAX_FAILURES_PER_CONNECTION` times is closed. Failures are
logged once per address per `LOG_INTERVAL_S`, with the count, so guessing cannot flood the log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

FIRST_DELAY_S = 0.25
MAX_DELAY_S = 8.0
#: Wrong tokens one connection may present before the gateway closes it.
MAX_FAILURES_PER_CONNECTION = 5
#: An address's failures are forgotten after this long without one (s).
FORGET_AFTER_S = 300.0
LOG_INTERVAL_S = 60.0
#: Addresses remembered at once (the oldest is forgotten first).
MAX_PEERS = 4096
#: Attempts from one address that may wait their turn; more are refused at once (`Throttled`), so a
#: flood of wrong tokens holds neither memory nor the place of a good one for hours.
MAX_WAITING_PER_PEER = 16


class Throttled(Exception):
    """Too many token attempts from one address are already waiting."""


@dataclass
class _Peer:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0
    failures: int = 0
    last_failure: float = 0.0
    unlogged: int = 0
    logged_at: float = float("-inf")


class AuthGuard:
    """Remembers failed token attempts per source address; see the module docstring."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`clock()` (s) dates failures; `sleep(seconds)` makes an attempt wait its delay (tests pass their own)."""
        self._clock = clock
        self._sleep = sleep
        self._peers: OrderedDict[str, _Peer] = OrderedDict()

    def delay_for(self, address: str) -> float:
        """Seconds the next attempt from `address` waits (0 when it has not failed lately)."""
        peer = self._peers.get(address)
        if peer is None or not peer.failures or self._clock() - peer.last_failure > FORGET_AFTER_S:
            return 0.0
        return min(MAX_DELAY_S, FIRST_DELAY_S * 2.0 ** (peer.failures - 1))

    async def attempt(self, address: str, check: Callable[[], bool]) -> bool:
        """Run one token `check` for `address` after its delay, one at a time per address; its outcome.

        Raises `Throttled` at once when `MAX_WAITING_PER_PEER` attempts from `address` already wait.
        """
        peer = self._peer(address)
        if peer.waiting >= MAX_WAITING_PER_PEER:
            raise Throttled(f"more than {MAX_WAITING_PER_PEER} token attempts from {address} are waiting")
        peer.waiting += 1
        try:
            async with peer.lock:
                delay = self.delay_for(address)
                if delay:
                    await self._sleep(delay)
                return self._checked(address, peer, check)
        finally:
            peer.waiting -= 1

    def check_now(self, address: str, check: Callable[[], bool]) -> bool:
        """Run one token `check` at once, behind no queue or delay: for an emergency stop only.

        A failure still counts toward `address`'s delay for its other attempts. Tokens are long
        random strings (see `gateway.credentials`), so guessing through estop gains nothing.
        """
        return self._checked(address, self._peer(address), check)

    def _checked(self, address: str, peer: _Peer, check: Callable[[], bool]) -> bool:
        if check():
            peer.failures = 0
            return True
        self._failed(address, peer)
        return False

    def _peer(self, address: str) -> _Peer:
        peer = self._peers.get(address)
        if peer is None:
            peer = self._peers[address] = _Peer()
            while len(self._peers) > MAX_PEERS:
                oldest = next(iter(self._peers))
                if self._peers[oldest].lock.locked() or self._peers[oldest].waiting:
                    break
                del self._peers[oldest]
        else:
            self._peers.move_to_end(address)
        return peer

    def _failed(self, address: str, peer: _Peer) -> None:
        now = self._clock()
        if now - peer.last_failure > FORGET_AFTER_S:
            peer.failures = 0
        peer.failures += 1
        peer.last_failure = now
        peer.unlogged += 1
        if now - peer.logged_at >= LOG_INTERVAL_S:
            log.warning(
                "%d wrong token%s from %s (next attempt waits %.2f s)",
                peer.unlogged,
                "" if peer.unlogged == 1 else "s",
                address,
                self.delay_for(address),
            )
            peer.unlogged = 0
            peer.logged_at = now
