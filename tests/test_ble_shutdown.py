"""Stopping BLE adapters at any moment of their connect (scan, connect, discovery, setup) ends them promptly.

Bumble's requests use `asyncio.wait_for`, which in Python 3.11 can swallow a cancellation; the
adapters must still end, and their `close` must not wait on requests the dropped link never answers.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devices.lego.adapter import LegoHubAdapter, LegoHubOptions
from devices.microbit.adapter import MicrobitAdapter, MicrobitOptions
from gateway.bus import Bus
from gateway.core.adapter import Adapter, DeviceContext


@pytest.mark.parametrize("after_s", [0.0, 0.03, 0.06, 0.09, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4])
async def test_cancel_during_connect_ends_and_closes_promptly(after_s: float) -> None:
    adapters: list[Adapter[Any]] = [
        MicrobitAdapter(DeviceContext("mb", Bus(), lambda *_: None), MicrobitOptions(simulate=True)),
        LegoHubAdapter(DeviceContext("hub", Bus(), lambda *_: None), LegoHubOptions(simulate=True)),
    ]
    tasks = [asyncio.create_task(adapter.run()) for adapter in adapters]
    await asyncio.sleep(after_s)
    for task in tasks:
        task.cancel()
    _, pending = await asyncio.wait(tasks, timeout=3.0)
    assert not pending, f"still running {after_s} s into the connect: {[t.get_stack() for t in pending]}"
    for adapter in adapters:
        await asyncio.wait_for(adapter.close(), 3.0)  # guards a hang only
