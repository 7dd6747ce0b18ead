"""A blocking wrapper of the asyncio client for scripts and notebooks: its event loop runs in a thread of its own.

from hwgateway.client.sync import connect

with connect("ws://127.0.0.1:8470/ws") as gw:
    print(gw.devices())
    for sample in gw.subscribe("sim-pad/state", max_rate_hz=2, limit=3):
        print(sample.seq)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from hwgateway.client.connection import Gateway, Subscription
from hwgateway.client.models import DeviceInfo, EstopOutcome, Sample

__all__ = ["SyncGateway", "SyncSubscription", "connect"]

T = TypeVar("T")


class SyncSubscription:
    """A blocking iterator of `Sample`; `timeout_s` bounds each wait (then `TimeoutError`)."""

    def __init__(self, owner: SyncGateway, subscription: Subscription, limit: int | None, timeout_s: float | None):
        self._owner = owner
        self._subscription = subscription
        self._left = limit
        self._timeout_s = timeout_s

    @property
    def dropped(self) -> int:
        """Samples dropped because too many waited unread."""
        return self._subscription.dropped

    def __iter__(self) -> Iterator[Sample]:
        return self

    def __next__(self) -> Sample:
        if self._left is not None and self._left <= 0:
            self.close()
            raise StopIteration
        try:
            sample = self._owner._run(self._subscription.__anext__(), self._timeout_s)
        except StopAsyncIteration:
            raise StopIteration from None
        if self._left is not None:
            self._left -= 1
        return sample

    def close(self) -> None:
        """Unsubscribe."""
        if not self._owner.closed:
            self._owner._run(self._subscription.aclose())

    def __enter__(self) -> SyncSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncGateway:
    """The same calls as `Gateway`, blocking; the connection lives on a daemon thread's event loop."""

    def __init__(self, url: str, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hwgateway-client", daemon=True)
        self._thread.start()
        self.closed = False
        try:
            self._gateway: Gateway = self._run(self._open(url, options))
        except BaseException:
            self._stop_loop()
            raise

    @staticmethod
    async def _open(url: str, options: Mapping[str, Any]) -> Gateway:
        return await Gateway(url, **options).open()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout_s)
        except FutureTimeout:
            future.cancel()
            raise TimeoutError(f"nothing within {timeout_s} s") from None

    @property
    def gateway(self) -> Gateway:
        """The asyncio client underneath (its attributes: `hello`, `device_status`, `reconnects`)."""
        return self._gateway

    def ping(self) -> float:
        """Round trip; the gateway's clock."""
        return self._run(self._gateway.ping())

    def devices(self) -> list[DeviceInfo]:
        """Every enabled device."""
        return self._run(self._gateway.devices())

    def describe(self, type: str | None = None) -> dict[str, Any]:
        """Every type, or one type's schema."""
        return self._run(self._gateway.describe(type))

    def command(
        self, device: str, type: str, data: Mapping[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Send a command; return its result data or raise the gateway's error."""
        return self._run(self._gateway.command(device, type, data, timeout_s=timeout_s))

    def lock(self, device: str) -> str:
        """Take the device's control lock; the holder's session id."""
        return self._run(self._gateway.lock(device))

    def unlock(self, device: str, *, force: bool = False) -> None:
        """Give the device's lock back."""
        self._run(self._gateway.unlock(device, force=force))

    def estop(self) -> list[EstopOutcome]:
        """Stop every device's actuators."""
        return self._run(self._gateway.estop())

    def subscribe(
        self,
        *patterns: str,
        max_rate_hz: float | None = None,
        limit: int | None = None,
        timeout_s: float | None = None,
        queue_size: int = 1024,
    ) -> SyncSubscription:
        """Subscribe now; iterate for samples (at most `limit` of them, each within `timeout_s`)."""
        subscription = self._gateway.subscribe(*patterns, max_rate_hz=max_rate_hz, queue_size=queue_size)
        self._run(subscription.start())
        return SyncSubscription(self, subscription, limit, timeout_s)

    def close(self) -> None:
        """Close the connection and stop the thread."""
        if not self.closed:
            self.closed = True
            try:
                self._run(self._gateway.close())
            finally:
                self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)
        self._loop.close()

    def __enter__(self) -> SyncGateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(url: str = "ws://127.0.0.1:8470/ws", *, token: str | None = None, **options: Any) -> SyncGateway:
    """A blocking client for the gateway at `url` (the options of `hwgateway.client.connect`)."""
    return SyncGateway(url, token=token, **options)
