"""The native protocol's `state` and `device` messages (docs/protocol.md), built from bus items.

The MQTT face publishes the same messages (docs/mqtt.md: "our `state` envelope"), so it builds them here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.bus import FRAMES_ENCODED, DeviceEvent, Outgoing, Sample
from gateway.wire import Encoding, encode


def state_message(sample: Sample) -> dict[str, Any]:
    """The `state` message of one sample."""
    return {
        "op": "state",
        "topic": sample.topic,
        "type": sample.type,
        "seq": sample.seq,
        "stamp": sample.stamp,
        "recv_stamp": sample.recv_stamp,
        "data": sample.data(),
    }


def device_message(event: DeviceEvent) -> dict[str, Any]:
    """The `device` message of a change of a device's availability or lock."""
    return {
        "op": "device",
        "device": event.device,
        "kind": event.kind,
        "status": event.status,
        "detail": event.detail,
        "stamp": event.stamp,
        "locked_by": event.locked_by,
    }


def message_of(item: Outgoing) -> dict[str, Any]:
    """The native message of a bus item: `state` for a sample, `device` for a device event."""
    if isinstance(item, Sample):
        return state_message(item)
    if isinstance(item, DeviceEvent):
        return device_message(item)
    raise TypeError(f"no native message for {type(item).__name__}")


def renderer(encoding: Encoding) -> Callable[[Outgoing], bytes]:
    """Renders a bus item as its native message in `encoding`, once per item however many clients send it.

    The cache key is the encoding itself, so every client of the native face with that encoding
    shares one render (and `gateway.bus.FRAMES_ENCODED` counts sample renders per encoding).
    """

    def render(item: Outgoing) -> bytes:
        # Written out rather than through `item.encoded`, a closure made per item and `message_of`:
        # this runs once per sample for all the face's clients, and those three calls less took a
        # 4-topic tick's publish and render from 36.4 to 33.0 µs with 2 MB of caches evicted before
        # each (docs/performance.md, "Measured per tick in the running servers").
        frames = item.frames
        frame = frames.get(encoding)
        if frame is None:
            if type(item) is Sample:
                frame = frames[encoding] = encode(state_message(item), encoding)
                FRAMES_ENCODED[encoding] += 1
            else:
                frame = frames[encoding] = encode(message_of(item), encoding)
        return frame

    return render
