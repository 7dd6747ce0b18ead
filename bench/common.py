"""Helpers the benchmarks share."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any


async def read_json_line(stream: asyncio.StreamReader, event: str, timeout: float = 20.0) -> dict[str, Any]:
    """The first JSON line on `stream` whose `event` is `event` (other lines are skipped); `timeout` in s."""
    async with asyncio.timeout(timeout):
        while True:
            line = await stream.readline()
            if not line:
                raise RuntimeError(f"process ended before printing {event!r}")
            with contextlib.suppress(ValueError):
                message: dict[str, Any] = json.loads(line)
                if message.get("event") == event:
                    return message
