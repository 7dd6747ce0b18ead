"""The bus on its own: latest value, patterns, coalescing, rate holding, encode-once, seq and stamps.

Rate holding runs on a clock the tests move by hand, so no test depends on how fast the machine is.
"""

from __future__ import annotations

import msgpack
import orjson
import pytest

from gateway.bus import FRAMES_ENCODED, Bus, DeviceEvent, Sample, Subscriber
from gateway.faces.native.messages import renderer
from gateway.messages.generic import Led
from gateway.wire import Encoding, websocket_text_frame


def led(value: float) -> Led:
    return Led(index=0, rgb=(value, 0.0, 0.0))


def websocket_payload(frame: bytes) -> bytes:
    """The payload of one unmasked WebSocket text frame, checking the header."""
    assert frame[0] == 0x81
    if frame[1] < 126:
        assert frame[1] == len(frame) - 2
        return frame[2:]
    assert frame[1] == 126
    assert int.from_bytes(frame[2:4], "big") == len(frame) - 4
    return frame[4:]


class ManualClock:
    """A monotonic clock (s) that moves only when a test advances it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def take(subscriber: Subscriber, now: float = 1000.0) -> list[Sample]:
    due, _ = subscriber.take_due(now)
    return [item for item in due if isinstance(item, Sample)]


async def test_new_subscriber_gets_latest_value_at_once() -> None:
    bus = Bus()
    bus.publish("dev/a", led(0.1))
    bus.publish("dev/a", led(0.2))
    bus.publish("other/a", led(0.3))
    subscriber = Subscriber("c", "json")
    bus.subscribe(subscriber, ["dev/*"], None)
    samples = take(subscriber)
    assert [(s.topic, s.seq, s.message.rgb[0]) for s in samples] == [("dev/a", 2, 0.2)]


def test_each_topic_counts_its_own_samples_and_the_counts_are_a_copy() -> None:
    bus = Bus()
    seqs = [bus.publish(topic, led(0.1)).seq for topic in ("dev/a", "dev/b", "dev/a", "dev/a", "dev/b")]
    assert seqs == [1, 1, 2, 3, 2]
    counts = bus.published
    assert counts == {"dev/a": 3, "dev/b": 2}
    counts["dev/a"] = 0  # a caller's copy: the bus's count and the next seq do not move
    assert bus.published["dev/a"] == 3
    assert bus.publish("dev/a", led(0.2)).seq == 4
    with pytest.raises(ValueError, match="topic 'dev//bad' must be"):
        bus.publish("dev//bad", led(0.3))  # refused: counts nothing
    assert bus.published == {"dev/a": 4, "dev/b": 2}


async def test_a_subscription_without_newest_gets_only_what_comes_after() -> None:
    bus = Bus()
    bus.publish("dev/a", led(0.1))
    subscriber = Subscriber("c", "json")
    bus.subscribe(subscriber, ["dev/*"], None, newest=False)  # rosbridge's second subscription to a topic
    assert take(subscriber) == []
    bus.publish("dev/a", led(0.2))
    assert [(s.seq, s.message.rgb[0]) for s in take(subscriber)] == [(2, 0.2)]


async def test_slow_subscriber_keeps_one_slot_per_topic_and_the_newest_value() -> None:
    bus = Bus()
    subscriber = Subscriber("c", "json")
    bus.subscribe(subscriber, ["dev/**"], None)
    for index in range(1000):
        bus.publish("dev/a", led(index / 1000))
        bus.publish("dev/b/c", led(index / 1000))
    assert subscriber.depth == 2
    assert subscriber.coalesced == 2 * 999
    samples = take(subscriber)
    assert [(s.topic, s.seq) for s in samples] == [("dev/a", 1000), ("dev/b/c", 1000)]
    assert subscriber.depth == 0


async def test_max_rate_holds_samples_back_but_delivers_the_newest() -> None:
    bus = Bus()
    subscriber = Subscriber("c", "json")
    bus.subscribe(subscriber, ["dev/a"], 10.0)
    bus.publish("dev/a", led(0.1))
    assert [s.seq for s in take(subscriber, 1000.0)] == [1]
    bus.publish("dev/a", led(0.2))
    bus.publish("dev/a", led(0.3))
    due, next_due = subscriber.take_due(1000.06)
    assert due == []
    assert next_due == 1000.1  # 10 Hz: 0.1 s after the last one went
    assert subscriber.take_due(1000.0999) == ([], 1000.1)
    due, _ = subscriber.take_due(next_due)
    assert [(s.seq, s.message.rgb[0]) for s in due if isinstance(s, Sample)] == [(3, 0.3)]


async def test_each_sample_is_encoded_once_per_encoding_for_any_number_of_subscribers() -> None:
    bus = Bus()
    encodings: list[Encoding] = ["json" if i % 2 else "msgpack" for i in range(20)]
    subscribers = [(encoding, Subscriber(f"c{i}", encoding)) for i, encoding in enumerate(encodings)]
    for _, subscriber in subscribers:
        bus.subscribe(subscriber, ["dev/a"], None)
    before = FRAMES_ENCODED.copy()
    bus.publish("dev/a", led(0.5), stamp=123.25)
    frames = [renderer(e)(item) for e, s in subscribers for item in s.take_due(1000.0)[0]]
    assert FRAMES_ENCODED["json"] - before["json"] == 1
    assert FRAMES_ENCODED["msgpack"] - before["msgpack"] == 1
    decoded = orjson.loads(websocket_payload(frames[1]))
    assert decoded == msgpack.unpackb(frames[0])
    assert decoded["stamp"] == 123.25
    assert decoded["recv_stamp"] > 1.7e9
    assert decoded["type"] == "led"
    assert decoded["data"] == {"index": 0, "rgb": [0.5, 0.0, 0.0]}


async def test_unsubscribe_and_detach_stop_delivery() -> None:
    bus = Bus()
    subscriber = Subscriber("c", "json")
    first = bus.subscribe(subscriber, ["dev/a"], None)
    bus.publish("dev/a", led(0.1))
    assert bus.unsubscribe(subscriber, first)
    assert not bus.unsubscribe(subscriber, first)
    bus.publish("dev/a", led(0.2))
    assert take(subscriber) == []
    bus.subscribe(subscriber, ["dev/a"], None)
    bus.detach(subscriber)
    assert subscriber.dropped == 1
    bus.publish("dev/a", led(0.3))
    assert subscriber.depth == 0


async def test_device_events_reach_attached_subscribers_keyed_per_device() -> None:
    bus = Bus()
    subscriber = Subscriber("c", "json")
    bus.attach(subscriber)
    bus.device_event(DeviceEvent("dev", "sim", "connecting", "", 1.0))
    bus.device_event(DeviceEvent("dev", "sim", "connected", "", 2.0))
    due, _ = subscriber.take_due(1000.0)
    assert len(due) == 1
    assert msgpack.unpackb(renderer("msgpack")(due[0]))["status"] == "connected"


async def test_a_sample_arriving_inside_the_rate_window_still_wakes_the_writer() -> None:
    bus = Bus()
    clock = ManualClock()
    subscriber = Subscriber("c", "json", clock)
    bus.subscribe(subscriber, ["dev/a"], 2.0)
    bus.publish("dev/a", led(0.1))
    take(subscriber, clock.now)
    subscriber.wakeup.clear()
    clock.now += 0.2
    bus.publish("dev/a", led(0.2))  # inside the 0.5 s window, and then the topic goes quiet
    assert subscriber.wakeup.is_set()  # so the writer arms its timer for this held-back sample
    due, next_due = subscriber.take_due(clock.now)
    assert due == []
    assert next_due == 1000.5
    subscriber.wakeup.clear()
    clock.now += 0.2
    bus.publish("dev/a", led(0.3))  # already held back with a timer armed: no extra wake-up
    assert not subscriber.wakeup.is_set()
    clock.now += 0.2
    bus.publish("dev/a", led(0.4))  # its timer is past due: the writer is woken for it
    assert subscriber.wakeup.is_set()
    assert [s.message.rgb[0] for s in take(subscriber, clock.now)] == [0.4]


async def test_unsubscribe_drops_what_it_left_unsent() -> None:
    bus = Bus()
    subscriber = Subscriber("c", "json")
    both = bus.subscribe(subscriber, ["dev/*"], None)
    bus.subscribe(subscriber, ["dev/b"], None)
    bus.publish("dev/a", led(0.1))
    bus.publish("dev/b", led(0.2))
    bus.unsubscribe(subscriber, both)
    assert [s.topic for s in take(subscriber)] == ["dev/b"]


@pytest.mark.parametrize("length", [0, 125, 126, 65535, 65536])
def test_websocket_framing_of_every_length_class(length: int) -> None:
    frame = websocket_text_frame(b"x" * length)
    header = frame[: len(frame) - length]
    expected = {0: 2, 125: 2, 126: 4, 65535: 4, 65536: 10}[length]
    assert len(header) == expected
    assert header[0] == 0x81
    declared = header[1] if expected == 2 else int.from_bytes(header[2:], "big")
    assert declared == length
