"""An adapter running in-process on a real bus, for adapter tests that need more control than the daemon."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from gateway.bus import Bus
from gateway.core.adapter import Adapter, Command, DeviceContext

AdapterT = TypeVar("AdapterT", bound=Adapter[Any])


class AdapterRig(Generic[AdapterT]):
    """An adapter of class `adapter_cls` under id `device_id`, with its status history."""

    def __init__(self, adapter_cls: Callable[[DeviceContext, Any], AdapterT], device_id: str, options: Any) -> None:
        self.device_id = device_id
        self.bus = Bus()
        self.statuses: list[tuple[str, str]] = []
        #: Every hardware identity the adapter reported (`DeviceContext.set_identity`), in order.
        self.identities: list[str | None] = []
        self.ctx = DeviceContext(
            device_id, self.bus, lambda status, detail: self.statuses.append((status, detail)), self.identities.append
        )
        self.adapter = adapter_cls(self.ctx, options)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.statuses.clear()
        self.task = asyncio.create_task(self.adapter.run())

    async def until(self, condition: Callable[[], object], timeout: float = 5.0) -> None:
        """Wait for `condition`, re-raising the adapter's failure if its task ends meanwhile."""
        async with asyncio.timeout(timeout):
            while not condition():
                assert self.task is not None
                if self.task.done():
                    self.task.result()
                await asyncio.sleep(0.01)

    async def connected(self, timeout: float = 5.0) -> None:
        await self.until(lambda: self.statuses and self.statuses[-1][0] == "connected", timeout)

    def latest(self, stream: str) -> Any:
        sample = self.bus.latest(f"{self.device_id}/{stream}")
        return None if sample is None else sample.message

    async def command(self, message: Any, kind: str = "", client: str = "client-1") -> Any:
        name = kind or type(message).__name__
        return await self.adapter.handle_command(Command(name, message, client, time.monotonic() + 5))

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        await self.adapter.close()
