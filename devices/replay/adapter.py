"""`kind = "replay"`: publish a recording's topics again, at their recorded pace scaled by `speed`.

Topics keep their recorded names (`<device>/<stream>`) with `prefix` put in front, so clients see them
like live devices; commands are answered `unavailable`, because nothing real is behind them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from devices.base import Adapter, Command
from gateway.errors import DeviceUnavailable, GatewayError
from gateway.messages import REGISTRY, from_plain
from gateway.record.replay_source import Recorded, load
from gateway.topics import matches

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """Config of a `kind = "replay"` device.

    `file`: the MCAP recording. `speed`: playback rate (2.0 twice as fast). `loop`: start again at the
    end. `topics`: patterns of the recorded topics to play. `prefix`: put in front of every topic
    (for example "replay/"; empty keeps the recorded device ids). `delay_s`: wait this long after
    starting before the first message (time for clients to subscribe).
    """

    file: str = ""
    speed: float = field(default=1.0, metadata={"min": 0.001, "max": 1000.0})
    loop: bool = False
    topics: tuple[str, ...] = ("**",)
    prefix: str = ""
    delay_s: float = field(default=0.0, metadata={"min": 0.0, "max": 3600.0})


class ReplayAdapter(Adapter[ReplayOptions]):
    """Plays one recording; commands of any type are refused as `unavailable`."""

    kind = "replay"
    options_class = ReplayOptions
    accepts = tuple(sorted(REGISTRY))

    def __init__(self, ctx: Any, options: ReplayOptions) -> None:
        super().__init__(ctx, options)
        self.played = 0
        self.skipped = 0
        self._topics: list[str] = []

    def capabilities(self) -> Mapping[str, Any]:
        """The file, speed and the recorded topics being played."""
        return {"file": Path(self.options.file).name, "speed": self.options.speed, "loop": self.options.loop}

    async def run(self) -> None:
        """Load the recording, then publish its messages at their scaled times (again with `loop`)."""
        recorded = await asyncio.to_thread(load, self.options.file)
        chosen = [m for m in recorded if any(matches(p, m.topic) for p in self.options.topics)]
        if not chosen:
            raise ValueError(f"{self.options.file}: no recorded topic matches {', '.join(self.options.topics)}")
        self.ctx.set_status("connected")
        await asyncio.sleep(self.options.delay_s)
        while True:
            await self._play(chosen)
            if not self.options.loop:
                self.ctx.set_status("stopped", "replay finished")
                await asyncio.Event().wait()  # stay listed; the supervisor cancels us at shutdown
            log.info("replay of %s starts again", self.options.file)

    async def _play(self, messages: list[Recorded]) -> None:
        speed = self.options.speed
        first = messages[0].log_time_ns
        started = time.monotonic()
        shift = time.time() - first / 1e9  # stamps move to now, keeping their offsets
        for message in messages:
            delay = started + (message.log_time_ns - first) / 1e9 / speed - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self._publish(message, shift)

    def _publish(self, recorded: Recorded, shift: float) -> None:
        info = REGISTRY.get(recorded.type)
        if info is None:
            self.skipped += 1
            return
        try:
            message = from_plain(info.cls, orjson.loads(recorded.data))
        except (GatewayError, ValueError):
            self.skipped += 1
            return
        self.ctx.publish_topic(self.options.prefix + recorded.topic, message, recorded.publish_time_ns / 1e9 + shift)
        self.played += 1

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Refuse: a replayed device has no hardware to drive."""
        raise DeviceUnavailable(
            f"device {self.ctx.device_id!r} replays {Path(self.options.file).name}; "
            f"it cannot carry out {command.type!r}"
        )
