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
from collections.abc import Callable
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


@dataclass
class _Peer:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    failures: int = 0
    last_failure: float = 0.0
    unlogged: int = 0
    logged_at: float = float("-inf")


class AuthGuard:
    """Remembers failed token attempts per source address; see the module docstring."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._peers: OrderedDict[str, _Peer] = OrderedDict()

    def delay_for(self, address: str) -> float:
        """Seconds the next attempt from `address` waits (0 when it has not failed lately)."""
        peer = self._peers.get(address)
        if peer is None or not peer.failures or self._clock() - peer.last_failure > FORGET_AFTER_S:
            return 0.0
        return min(MAX_DELAY_S, FIRST_DELAY_S * 2.0 ** (peer.failures - 1))

    async def attempt(self, address: str, check: Callable[[], bool]) -> bool:
        """Run one token `check` for `address` after its delay, one at a time per address; its outcome."""
        peer = self._peer(address)
        async with peer.lock:
            delay = self.delay_for(address)
            if delay:
                await asyncio.sleep(delay)
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
                if self._peers[oldest].lock.locked():
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
