"""A binding's view of its source: the newest sample per stream it reads, when it arrived, whether the source is there.

The watch is a bus subscriber of its own (no face, no socket): the bus hands it each sample directly
(`Subscriber.direct`), and it keeps only the newest one per stream with its arrival time, so the
binding's output timer always reads the latest input and never a backlog. A source is a device id
or a glob (`pad-*`): the device of the newest sample wins, and availability is that device's.

A repeat is not a sample: a message carrying the same non-zero `timestamp` as the one before it on
its stream (a gamepad republishing its state when no new reading of the pad was made, a bridge
resending its last value) neither refreshes the arrival time nor fires actions, so a binding's
timeout is judged on the age of the newest sample the source really sent, never on repeats.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable
from typing import Any

from gateway.bus import Bus, DeviceEvent, Outgoing, Sample, Subscriber

_GLOB_CHARACTERS = frozenset("*?[")


def is_glob(source: str) -> bool:
    """True when `source` names devices by a glob rather than one device id."""
    return any(character in _GLOB_CHARACTERS for character in source)


class SourceWatch:
    """The newest sample of each of `streams` of the devices matching `source`, with its arrival time (`clock()` s).

    `latest` maps each stream of the current source device to its newest message (what the
    binding's input paths read); `on_sample(stream, message)` is called with every accepted sample.

    `status_of(device_id)` tells a device's availability now ("connected", ...; None: no such device);
    `on_lost()` is called (on the loop, synchronously) when the device of the newest sample stops
    being connected, so the binding reacts before its next tick.
    """

    def __init__(
        self,
        name: str,
        source: str,
        streams: frozenset[str],
        status_of: Callable[[str], str | None],
        clock: Callable[[], float] = time.monotonic,
        on_lost: Callable[[], None] | None = None,
        on_sample: Callable[[str, Any], None] | None = None,
    ) -> None:
        self.source = source
        self.streams = streams
        self._on_sample = on_sample
        self._glob = is_glob(source)
        self._status_of = status_of
        self._clock = clock
        self._on_lost = on_lost
        self._subscriber = Subscriber(f"binding:{name}", "internal")
        self._subscriber.direct = self._deliver
        self._bus: Bus | None = None
        self._wanted: dict[str, bool] = {}
        #: The newest message per stream of `device`, the device of the newest sample, its arrival (`clock()` s).
        self.latest: dict[str, Any] = {}
        self.device = ""
        self.arrived = 0.0
        self.samples = 0
        #: Samples of the source that repeated the previous one's timestamp (not counted as fresh).
        self.repeats = 0
        self._stamps: dict[str, tuple[int, int]] = {}
        self._lost_device = ""

    def attach(self, bus: Bus) -> None:
        """Start receiving the source's samples and availability (only samples from now on count)."""
        self._bus = bus
        bus.attach(self._subscriber)
        pattern = "*/**" if self._glob else f"{self.source}/**"
        bus.subscribe(self._subscriber, [pattern], None, newest=False)

    def detach(self) -> None:
        """Stop receiving anything."""
        if self._bus is not None:
            self._bus.detach(self._subscriber)
            self._bus = None

    def forget(self) -> None:
        """Drop the newest samples (after a lost source: only a sample from its return counts)."""
        self.latest = {}
        self.device = ""
        self._stamps = {}

    def age(self, now: float) -> float | None:
        """Seconds since the newest sample arrived (None: no sample)."""
        return None if not self.latest else max(0.0, now - self.arrived)

    def connected(self) -> bool:
        """True when the device of the newest sample is connected now (False without a sample)."""
        if not self.latest or self.device == self._lost_device:
            return False
        return self._status_of(self.device) == "connected"

    def _matches(self, device: str) -> bool:
        wanted = self._wanted.get(device)
        if wanted is None:
            wanted = self._wanted[device] = (
                fnmatch.fnmatchcase(device, self.source) if self._glob else (device == self.source)
            )
        return wanted

    def _deliver(self, item: Outgoing) -> bool:
        """The bus's hand-over: keep a matching controller state, watch availability; never queue."""
        if isinstance(item, Sample):
            device, _, stream = item.topic.partition("/")
            if stream in self.streams and self._matches(device):
                if device != self.device:
                    self.latest = {}  # another device of the glob: its own streams only
                    self._stamps = {}
                stamp = _stamp_of(item.message)
                if stamp is not None:
                    if self._stamps.get(stream) == stamp and stream in self.latest:
                        self.repeats += 1
                        return True
                    self._stamps[stream] = stamp
                self.latest[stream], self.device, self.arrived = item.message, device, self._clock()
                self.samples += 1
                if device == self._lost_device:
                    self._lost_device = ""
                if self._on_sample is not None:
                    self._on_sample(stream, item.message)
        elif (
            isinstance(item, DeviceEvent)
            and item.status != "connected"
            and item.device == self.device
            and self._matches(item.device)
        ):
            # Back again, it is a source once more only with a fresh sample (see above).
            self._lost_device = item.device
            if self._on_lost is not None:
                self._on_lost()
        return True


def _stamp_of(message: Any) -> tuple[int, int] | None:
    """A message's own `timestamp` (a `Time`: seconds, nanoseconds), None when it has none or it is 0."""
    stamp = getattr(message, "timestamp", None)
    if stamp is None and isinstance(message, dict):
        stamp = message.get("timestamp")
    if isinstance(stamp, dict):
        sec, nanosec = stamp.get("sec"), stamp.get("nanosec")
    else:
        sec, nanosec = getattr(stamp, "sec", None), getattr(stamp, "nanosec", None)
    if not isinstance(sec, int) or not isinstance(nanosec, int) or (sec == 0 and nanosec == 0):
        return None
    return sec, nanosec
