"""`kind = "replay"`: publish a recording's topics again, at their recorded pace scaled by `speed`.

Topics keep their recorded names (`<device>/<stream>`) with `prefix` put in front. Each recorded
device (from the recording's `hwgateway` metadata, or the topics' first segment) is listed as its own
device `<prefix><recorded id>` with its recorded kind and message types, so clients see it like a live
device; commands to it answer `unavailable`. A prefix with a `/` (e.g. "replay/") puts every topic
under one device id instead, and no replayed devices are listed.

The replay device itself takes `hwgateway/ReplaySeek`, `ReplayPause`, `ReplayResume` and
`ReplaySpeed` (gateway/messages/replay.py), each answered with a `hwgateway/ReplayState`; any other
command is answered `unavailable`, because nothing real is behind it.
"""

from __future__ import annotations

import asyncio
import bisect
import functools
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, cast

import orjson

from gateway.bus import DeviceStatus
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.config import DeviceConfig
from gateway.core.dispatch import CommandTable
from gateway.errors import DeviceUnavailable, GatewayError, InvalidArgument
from gateway.messages import REGISTRY, from_plain, schema_of, to_plain
from gateway.messages.replay import ReplaySpeed, ReplayState
from gateway.messages.shapes import Reshape, inward
from gateway.record.channels import DEVICE_TOPIC
from gateway.record.replay_source import Recorded, Recording
from gateway.record.replay_stream import StreamedRecording, open_recording
from gateway.topics import check_device_id
from gateway.waits import wait_event

log = logging.getLogger(__name__)

#: Messages published back to back before the loop runs other tasks (a replay at speed 1000 is a burst).
MAX_BURST = 64
#: A loop over the recording starts again at most this often, s (a file of one message, or one instant).
MIN_LOOP_S = 0.1


def _unchanged(value: Any) -> Any:
    return value


@functools.cache
def our_form(type_name: str) -> Reshape:
    """Turns a recorded message of the registered type `type_name` into our form.

    Recordings store arrays of arrays in the viewer form (`gateway.messages.shapes`); older files
    hold them as they are. Both read back the same.
    """
    reshape = inward(schema_of(REGISTRY[type_name].cls))
    return reshape if reshape is not None else _unchanged


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """Config of a `kind = "replay"` device.

    `file`: the MCAP recording. `speed`: playback rate (2.0 twice as fast). `loop`: start again at the
    end. `topics`: patterns of the recorded topics to play. `prefix`: put in front of every topic and
    recorded device id (for example "replay-"; empty keeps the recorded ids). `delay_s`: wait this
    long after starting before the first message (time for clients to subscribe).
    """

    file: str = ""
    speed: float = field(default=1.0, metadata={"min": 0.001, "max": 1000.0})
    loop: bool = False
    topics: tuple[str, ...] = ("**",)
    prefix: str = ""
    delay_s: float = field(default=0.0, metadata={"min": 0.0, "max": 3600.0})


@dataclass(frozen=True, slots=True)
class ReplayedOptions:
    """A recorded device listed by a replay device: its recorded entry and who replays it."""

    recorded: Mapping[str, Any]
    player: str
    file: str


class ReplayedDevice(Adapter[ReplayedOptions]):
    """A recorded device, listed like a live one while a replay device publishes its topics."""

    kind = "replayed"
    options_class = ReplayedOptions

    def __init__(self, ctx: DeviceContext, options: ReplayedOptions) -> None:
        super().__init__(ctx, options)
        recorded = options.recorded
        self.publishes = tuple(str(t) for t in recorded.get("publishes", ()))
        self.accepts = tuple(str(t) for t in recorded.get("accepts", ()))

    def capabilities(self) -> Mapping[str, Any]:
        """Where the samples come from."""
        return {"replayed_by": self.options.player, "file": self.options.file,
                "recorded_id": str(self.options.recorded["id"])}  # fmt: skip

    async def run(self) -> None:
        """Stay connected: the replay device publishes the samples."""
        self.ctx.set_status("connected", f"replayed from {self.options.file} by {self.options.player}")
        await asyncio.Event().wait()

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Refuse: a replayed device has no hardware to drive."""
        raise DeviceUnavailable(
            f"device {self.ctx.device_id!r} is replayed from {self.options.file} by {self.options.player!r}; "
            f"it cannot carry out {command.type!r}"
        )


class ReplayAdapter(Adapter[ReplayOptions]):
    """Plays one recording; seek, pause, resume and speed by command; other commands are refused as `unavailable`."""

    kind = "replay"
    options_class = ReplayOptions
    accepts = tuple(sorted(REGISTRY))

    def __init__(self, ctx: Any, options: ReplayOptions) -> None:
        super().__init__(ctx, options)
        self.played = 0
        self.skipped = 0
        self.speed = options.speed
        self._source: Recording | StreamedRecording = Recording()
        self._first_ns = 0  # log time of the first message
        self._index: int | None = 0  # of the next message; None: to find after a seek
        self._seeks = 0  # seeks so far: a block loaded for an older one is not used to place the index
        self._blocks: dict[int, Recording] = {}  # loaded blocks of the recording: the one playing and the next
        self._loading: dict[int, asyncio.Task[Recording]] = {}
        self._cancel = threading.Event()  # set when `run` ends: block loads in threads stop
        self._left_out_said = False
        self._anchor_ns = 0  # recording position at `_anchor_mono`
        self._anchor_mono = time.monotonic()
        self._state = "playing"
        self._changed = asyncio.Event()
        self._listed: set[str] = set()
        #: The listed devices' adapters by recorded id: the recording's availability changes play on them.
        self._replayed: dict[str, Adapter[Any]] = {}

    def capabilities(self) -> Mapping[str, Any]:
        """The file, speed, loop, state and position."""
        return {"file": Path(self.options.file).name, "speed": self.speed, "loop": self.options.loop,
                "state": self._state, "position_s": round(self._position_ns() / 1e9, 6),
                "duration_s": self._duration_ns() / 1e9, "replayed_devices": sorted(self._listed)}  # fmt: skip

    async def run(self) -> None:
        """Load the recording (in a thread, abandoned if stopped), list its devices, then publish its messages."""
        self._cancel = cancel = threading.Event()
        try:
            source = await asyncio.to_thread(
                open_recording, self.options.file, frozenset({DEVICE_TOPIC}), self.options.topics,
                self.options.prefix, cancel,
            )  # fmt: skip
            chosen = source.chosen_topics()
            self._say_left_out(source)
            if not chosen or not len(source):
                raise ValueError(f"{self.options.file}: no recorded topic matches {', '.join(self.options.topics)}")
            self._source, self._first_ns = source, source.first_ns
            self._blocks = {0: source} if isinstance(source, Recording) else {}
            self._loading.clear()
            self._list_devices(chosen, source.devices)
            self.ctx.set_status("connected")
            await asyncio.sleep(self.options.delay_s)
            self._seek(0)
            await self._play()
        finally:
            cancel.set()  # stopped while reading: the threads end within a record, the process need not wait

    def _say_left_out(self, recording: Recording | StreamedRecording) -> None:
        """Log the recorded topics left out and where a damaged file stops, once (not again at each restart)."""
        if self._left_out_said:
            return
        self._left_out_said = True
        contents = recording.contents
        if not contents.complete:
            log.warning("replay of %s plays the %d messages before the file's end or damage: %s",
                        self.options.file, len(recording), contents.stopped_by)  # fmt: skip
        refused = recording.refused
        if refused:
            shown = "; ".join(f"{topic!r}: {why}" for topic, why in list(refused.items())[:10])
            more = f" (and {len(refused) - 10} more)" if len(refused) > 10 else ""
            log.warning(
                "replay of %s leaves out %d recorded topics: %s%s", self.options.file, len(refused), shown, more
            )

    def _list_devices(self, chosen: list[str], devices: list[dict[str, Any]]) -> None:
        """Add `<prefix><id>` for every recorded device with a chosen topic (once; again after a restart: kept)."""
        add = self.ctx.add_device
        if add is None:
            return
        entries = {str(d["id"]): d for d in devices}
        name = Path(self.options.file).name
        for device in sorted({topic.split("/", 1)[0] for topic in chosen}):
            replayed_id = self.options.prefix + device
            if replayed_id in self._listed:
                continue
            try:
                check_device_id(replayed_id)
            except ValueError:
                return  # a prefix with "/": the topics live under one device id
            entry = entries.get(device, {"id": device, "kind": "replayed"})
            kind = str(entry.get("kind", "replayed"))
            options = ReplayedOptions(entry, self.ctx.device_id, name)
            try:
                handle = add(DeviceConfig(replayed_id, kind, True, options), ReplayedDevice)
            except ValueError:
                raise ValueError(
                    f"recorded device {device!r} would be listed as {replayed_id!r}, which is already a device here;"
                    ' set the replay device\'s prefix (e.g. prefix = "replay-")'
                ) from None
            self._listed.add(replayed_id)
            self._replayed[device] = handle.adapter

    # -- the clock ---------------------------------------------------------------------------

    def _duration_ns(self) -> int:
        return self._source.last_ns - self._first_ns if len(self._source) else 0

    def _position_ns(self) -> int:
        if self._state != "playing":
            return self._anchor_ns
        elapsed = (time.monotonic() - self._anchor_mono) * 1e9 * self.speed
        return min(self._anchor_ns + int(elapsed), self._duration_ns())

    def _seek(self, position_ns: int) -> None:
        self._anchor_ns = position_ns
        self._anchor_mono = time.monotonic()
        self._index = None  # found by `_play`, which may have to read the block first
        self._seeks += 1
        self._changed.set()

    async def _block(self, block: int) -> Recording:
        """Block `block` of the recording, read in a thread unless loaded; the next one is read ahead."""
        loaded = self._blocks.get(block)
        if loaded is None:
            loaded = await asyncio.shield(self._load(block))
        for old in [b for b in self._blocks if b not in (block, block + 1)]:
            del self._blocks[old]
        if block + 1 < self._source.blocks and block + 1 not in self._blocks:
            self._load(block + 1)  # read ahead while this one plays
        return loaded

    def _load(self, block: int) -> asyncio.Task[Recording]:
        task = self._loading.get(block)
        if task is None:
            task = self._loading[block] = asyncio.create_task(self._read_block(block))
            # a read ahead nobody awaits may fail (the file changed, or the device stops): the player
            # meets the failure again when it gets there
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
        return task

    async def _read_block(self, block: int) -> Recording:
        try:
            loaded = await asyncio.to_thread(self._source.load_block, block, self._cancel)
        finally:
            self._loading.pop(block, None)  # (a restart may have cleared it)
        self._blocks[block] = loaded
        return loaded

    async def _find_index(self) -> None:
        """After a seek: the index of the first message at the anchor's position or later."""
        seeks, target = self._seeks, self._first_ns + self._anchor_ns
        block = self._source.block_for_time(target)
        if block >= self._source.blocks:
            index = len(self._source)
        else:
            loaded = await self._block(block)
            index = self._source.block_start(block) + bisect.bisect_left(loaded.log_ns, target)
        if seeks == self._seeks:  # else a newer seek came meanwhile: find its index instead
            self._index = index

    async def _play(self) -> None:
        busy = 0  # messages published since the loop last ran other tasks
        while True:
            self._changed.clear()
            if self._state != "playing":
                await self._changed.wait()
                continue
            if busy >= MAX_BURST:
                busy = 0  # a fast replay (or a loop over a short file) lets the loop run other tasks
                await asyncio.sleep(0)
                continue
            if self._index is None:
                await self._find_index()
                continue
            if self._index >= len(self._source):
                if self.options.loop:
                    await self._loop_again()
                    continue
                self._state = "finished"
                self._anchor_ns = self._duration_ns()
                self.ctx.set_status("connected", "replay finished")
                continue
            block = self._source.block_of(self._index)
            loaded = self._blocks.get(block)
            if loaded is None:
                await self._block(block)
                continue  # a seek may have come meanwhile
            local = self._index - self._source.block_start(block)
            offset_ns = loaded.log_ns[local] - self._first_ns
            delay = self._anchor_mono + (offset_ns - self._anchor_ns) / 1e9 / self.speed - time.monotonic()
            if delay > 0:
                busy = 0
                # Not asyncio.wait_for, which on Python 3.11 can swallow the cancellation of the device's stop.
                if await wait_event(self._changed, delay):
                    continue  # seek, pause or speed: recompute
            self._publish(loaded.message(local))
            self._index += 1
            busy += 1

    async def _loop_again(self) -> None:
        """Start again from 0, one turn at most every MIN_LOOP_S: a one-message file does not spin."""
        turn_s = self._duration_ns() / 1e9 / self.speed
        if turn_s < MIN_LOOP_S and await wait_event(self._changed, MIN_LOOP_S - turn_s):
            return  # seek, pause or speed meanwhile: they set the position
        # said for turns a person follows; a turn of a short file is not news ten times a second
        log.log(logging.INFO if turn_s >= 1.0 else logging.DEBUG, "replay of %s starts again", self.options.file)
        self._seek(0)

    def _publish(self, recorded: Recorded) -> None:
        if recorded.topic == DEVICE_TOPIC:
            self._replay_availability(recorded)
            return
        info = REGISTRY.get(recorded.type)
        if info is None:
            self.skipped += 1
            return
        try:
            message = from_plain(info.cls, our_form(recorded.type)(orjson.loads(recorded.data)))
        except (GatewayError, ValueError):
            self.skipped += 1
            return
        # stamps move to now, keeping their offsets from the message being played
        shift = time.time() - recorded.log_time_ns / 1e9
        try:
            self.ctx.publish_topic(
                self.options.prefix + recorded.topic, message, recorded.publish_time_ns / 1e9 + shift
            )
        except ValueError:  # the loader leaves out topics the bus refuses; a refusal here is skipped, not fatal
            self.skipped += 1
            return
        self.played += 1

    def _replay_availability(self, recorded: Recorded) -> None:
        """A recorded `_gateway/device` event: the replayed device takes the recorded status."""
        try:
            event = orjson.loads(recorded.data)
        except ValueError:
            self.skipped += 1
            return
        adapter = self._replayed.get(_event_device(recorded))
        status = event.get("status") if isinstance(event, dict) else None
        if adapter is None or status not in RECORDED_STATUSES:
            self.skipped += 1
            return
        detail = event.get("detail")
        said = f"recorded: {detail}" if isinstance(detail, str) and detail else "recorded"
        adapter.ctx.set_status(cast(DeviceStatus, status), said)
        self.played += 1

    # -- commands ----------------------------------------------------------------------------

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Seek, pause, resume or change speed; refuse anything else as `unavailable`."""
        controls = self.controls.types()
        if not len(self._source) and command.type in controls:
            raise DeviceUnavailable(f"device {self.ctx.device_id!r} has not loaded {self.options.file} yet")
        if command.type not in controls:
            raise DeviceUnavailable(
                f"device {self.ctx.device_id!r} replays {Path(self.options.file).name}; "
                f"it cannot carry out {command.type!r} (it takes {', '.join(controls)})"
            )
        applied: str = await self.controls.run(self, command)
        state = ReplayState(self._state, self._position_ns() / 1e9, self._duration_ns() / 1e9, self.speed,
                            self.options.loop, applied)  # fmt: skip
        return to_plain(state)

    async def _seek_command(self, command: Command) -> str:
        return self._do_seek(command.message.position_s)

    async def _pause_command(self, command: Command) -> str:
        return self._do_pause()

    async def _resume_command(self, command: Command) -> str:
        return self._do_resume()

    async def _speed_command(self, command: Command) -> str:
        message: ReplaySpeed = command.message
        self._seek(self._position_ns())
        applied = f"speed {self.speed:g} -> {message.speed:g}"
        self.speed = message.speed
        return applied

    def _do_seek(self, position_s: float) -> str:
        duration_s = self._duration_ns() / 1e9
        if position_s > duration_s:
            raise InvalidArgument(
                f"data.position_s: {position_s:g} s is beyond the recording's end ({duration_s:.3f} s)"
            )
        if self._state == "finished":
            self._state = "playing"
        self._seek(round(position_s * 1e9))
        return f"seek to {position_s:.3f} s"

    def _do_pause(self) -> str:
        if self._state != "playing":
            return f"nothing: the replay is {self._state}"
        self._seek(self._position_ns())
        self._state = "paused"
        return f"paused at {self._anchor_ns / 1e9:.3f} s"

    def _do_resume(self) -> str:
        if self._state == "playing":
            return "nothing: the replay is playing"
        if self._state == "finished":
            self._state = "playing"
            self._seek(0)
            self.ctx.set_status("connected")
            return "playing again from 0.000 s"
        self._state = "playing"
        self._seek(self._anchor_ns)
        return f"resumed at {self._anchor_ns / 1e9:.3f} s"

    #: The replay's own commands, and their handlers (every other type is refused as `unavailable`).
    controls: ClassVar[CommandTable[ReplayAdapter, Command]] = CommandTable(
        {
            "hwgateway/ReplayPause": _pause_command,
            "hwgateway/ReplayResume": _resume_command,
            "hwgateway/ReplaySeek": _seek_command,
            "hwgateway/ReplaySpeed": _speed_command,
        }
    )


#: Recorded statuses a replayed device takes (`stopped` belongs to the live gateway's shutdown).
RECORDED_STATUSES = frozenset({"connecting", "connected", "disconnected"})


def _event_device(recorded: Recorded) -> str:
    """The device a recorded `_gateway/device` event is about ("" when unreadable)."""
    try:
        device = orjson.loads(recorded.data).get("device")
    except (ValueError, AttributeError):
        return ""
    return device if isinstance(device, str) else ""
