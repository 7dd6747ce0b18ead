"""Export: this gateway's devices and samples on the broker, retained, at most `publish_rate_hz` per topic.

The exporter is a client of the core subscribed to the configured patterns. While the broker is up
and a topic's last sample went out at least 1/`publish_rate_hz` ago, a new sample is written at once,
in the bus's `publish` call (the subscriber's direct path): on a loaded host, waking a task per
sample let bursts of one topic's samples coalesce before they were sent. Otherwise the sample waits
in the mailbox and then in `_held` (latest value wins per topic) until its topic is due, so a slow or
absent broker never blocks a device; after a reconnect everything retained is sent again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import orjson

from gateway.bus import DeviceEvent, Outgoing, Sample
from gateway.core.client import Client, Hub
from gateway.credentials import OPEN_ACCESS
from gateway.faces.mqtt.link import Link
from gateway.faces.mqtt.topics import TopicMap
from gateway.faces.native.messages import device_message, state_message
from gateway.waits import wait_event

log = logging.getLogger(__name__)

#: How long device events are gathered before the retained device list is sent again (s).
DEVICES_DEBOUNCE_S = 0.05


def availability_payload(event: DeviceEvent) -> bytes:
    """Our `device` message plus a Zigbee2MQTT-style `state`: `online` while connected, else `offline`."""
    envelope = device_message(event)
    envelope["state"] = "online" if event.status == "connected" else "offline"
    return orjson.dumps(envelope)


class Exporter:
    """Sends local samples, availability and the device list to the broker."""

    def __init__(
        self,
        hub: Hub,
        topics: TopicMap,
        link: Link,
        patterns: tuple[str, ...],
        rate_hz: float,
        is_local: Callable[[str], bool],
        on_new_topic: Callable[[Sample], None],
    ) -> None:
        self._hub = hub
        self._topics = topics
        self._link = link
        self._is_local = is_local
        self._on_new_topic = on_new_topic
        self.client = Client(hub, "mqtt", "json")
        self.client.credential = OPEN_ACCESS  # the operator configured this export; it reads everything
        self._patterns = patterns
        self._interval = 1.0 / rate_hz
        #: When each topic may be sent next (monotonic s), and samples waiting for that time.
        self._not_before: dict[str, float] = {}
        self._held: dict[str, Sample] = {}
        self._seen: set[str] = set()
        self._devices_due = False
        self.published = 0

    def start(self) -> None:
        """Attach to the bus (device events and the configured patterns)."""
        self.client.join()
        self.client.subscribe(self._patterns, None)  # the rate is kept here, so that the direct path applies
        self.client.subscriber.direct = self._direct

    def stop(self) -> None:
        """Detach from the bus."""
        self.client.leave()

    async def republish(self) -> None:
        """Send every retained topic again (after a connect): device list, availability, latest samples."""
        await self._send_devices()
        for handle in self.client.devices():
            if self._is_local(handle.id):
                await self._send(handle.event())
        for topic in self._hub.bus.topics():
            sample = self._hub.bus.latest(topic)
            if sample is not None and self.client.subscriber.interval_for(topic) is not None:
                self._held.pop(topic, None)
                await self._send(sample)

    async def run(self) -> None:
        """Send what the mailbox holds while the broker connection is up (cancelled when it drops)."""
        subscriber = self.client.subscriber
        while True:
            subscriber.wakeup.clear()
            now = time.monotonic()
            due, _ = subscriber.take_due(now)
            for item in due:
                if isinstance(item, Sample):
                    self._held[item.topic] = item
            batch = []
            next_due: float | None = None
            for topic in list(self._held):
                not_before = self._not_before.get(topic, 0.0)
                if not_before > now:
                    next_due = not_before if next_due is None else min(next_due, not_before)
                    continue
                state = self._state(self._held.pop(topic))
                if state is not None:
                    batch.append(state)
                    self._not_before[topic] = now + self._interval
            if batch:
                self._link.publish_now(batch)  # QoS 0: nothing to wait for, written out together
                self.published += len(batch)
            for item in due:
                if not isinstance(item, Sample):
                    await self._send(item)
            if self._devices_due:
                await asyncio.sleep(DEVICES_DEBOUNCE_S)
                await self._send_devices()
                continue
            if not subscriber.depth:
                timeout = None if next_due is None else max(next_due - time.monotonic(), 0.0)
                # Not asyncio.wait_for: on Python 3.11 it swallows a cancellation that comes with the
                # wakeup, and the bridge's stop then waited for this loop for ever (gateway/waits.py).
                await wait_event(subscriber.wakeup, timeout)

    def _direct(self, item: Outgoing) -> bool:
        """Write a sample at once when the broker is up and its topic is due; False: through the mailbox."""
        if not isinstance(item, Sample) or not self._link.connected or item.topic in self._held:
            return False
        now = time.monotonic()
        if self._not_before.get(item.topic, 0.0) > now:
            return False
        state = self._state(item)
        if state is not None:
            try:
                self._link.publish_now([state])
            except Exception:  # the connection just broke: the mailbox keeps the sample for the reconnect
                return False
            self._not_before[item.topic] = now + self._interval
            self.published += 1
        return True

    def _state(self, sample: Sample) -> tuple[str, bytes] | None:
        """The topic and payload of a sample of a local device (None for an imported one: loop guard)."""
        if not self._is_local(sample.topic.split("/", 1)[0]):
            return None
        if sample.topic not in self._seen:
            self._seen.add(sample.topic)
            self._on_new_topic(sample)
        payload = sample.encoded("mqtt", lambda: orjson.dumps(state_message(sample)))  # once for every face
        return self._topics.state(self._topics.own, sample.topic), payload

    async def _send(self, item: Outgoing) -> None:
        if isinstance(item, Sample):
            state = self._state(item)
            if state is not None:
                self._link.publish_now([state])
        elif isinstance(item, DeviceEvent):
            if not self._is_local(item.device):
                return
            topic = self._topics.device(self._topics.own, item.device, "availability")
            await self._link.publish(topic, availability_payload(item), qos=1, retain=True)
            self._devices_due = True
        else:
            return
        self.published += 1

    async def _send_devices(self) -> None:
        self._devices_due = False
        devices = [d for d in self.client.list_devices() if self._is_local(d["id"])]
        payload = orjson.dumps({"gateway": self._topics.own, "devices": devices})
        await self._link.publish(self._topics.gateway(self._topics.own, "devices"), payload, qos=1, retain=True)
        self.published += 1
