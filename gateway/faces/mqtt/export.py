"""Export: this gateway's devices and samples on the broker, retained, at most `publish_rate_hz` per topic.

The exporter is a client of the core subscribed to the configured patterns. Its mailbox coalesces
(latest value wins), so a slow or absent broker never blocks a device: while the broker is away the
mailbox keeps the newest sample of each topic, and after a reconnect everything retained is sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import orjson

from gateway.bus import DeviceEvent, Outgoing, Sample
from gateway.core.client import Client, Hub
from gateway.credentials import OPEN_ACCESS
from gateway.faces.mqtt.link import Link
from gateway.faces.mqtt.topics import TopicMap

log = logging.getLogger(__name__)

#: How long device events are gathered before the retained device list is sent again (s).
DEVICES_DEBOUNCE_S = 0.05


def availability_payload(event: DeviceEvent) -> bytes:
    """Our `device` message plus a Zigbee2MQTT-style `state`: `online` while connected, else `offline`."""
    envelope = event.envelope()
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
        self._rate_hz = rate_hz
        self._seen: set[str] = set()
        self._devices_due = False
        self.published = 0

    def start(self) -> None:
        """Attach to the bus (device events and the configured patterns)."""
        self.client.join()
        self.client.subscribe(self._patterns, self._rate_hz)

    def stop(self) -> None:
        """Detach from the bus."""
        self.client.leave()

    async def republish(self) -> None:
        """Send every retained topic again (after a connect): device list, availability, latest samples."""
        await self._send_devices()
        for handle in list(self._hub.supervisor.devices.values()):
            if self._is_local(handle.id):
                await self._send(handle.event())
        for topic in self._hub.bus.topics():
            sample = self._hub.bus.latest(topic)
            if sample is not None and self.client.subscriber.interval_for(topic) is not None:
                await self._send(sample)

    async def run(self) -> None:
        """Send what the mailbox holds while the broker connection is up (cancelled when it drops)."""
        subscriber = self.client.subscriber
        while True:
            subscriber.wakeup.clear()
            due, next_due = subscriber.take_due(time.monotonic())
            states = [self._state(item) for item in due if isinstance(item, Sample)]
            batch = [message for message in states if message is not None]
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
            if not due:
                timeout = None if next_due is None else max(next_due - time.monotonic(), 0.0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(subscriber.wakeup.wait(), timeout)

    def _state(self, sample: Sample) -> tuple[str, bytes] | None:
        """The topic and payload of a sample of a local device (None for an imported one: loop guard)."""
        if not self._is_local(sample.topic.split("/", 1)[0]):
            return None
        if sample.topic not in self._seen:
            self._seen.add(sample.topic)
            self._on_new_topic(sample)
        payload = sample.encoded("mqtt", lambda: orjson.dumps(sample.envelope()))  # once for every face
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
