"""What the parts of the MQTT face need of the broker connection: publish, and whether it is up."""

from __future__ import annotations

from typing import Protocol

from paho.mqtt.properties import Properties


class Link(Protocol):
    """The bridge's broker connection as its parts see it."""

    @property
    def connected(self) -> bool:
        """True while the broker connection is up."""

    async def publish(
        self, topic: str, payload: bytes, qos: int = 0, retain: bool = False, properties: Properties | None = None
    ) -> None:
        """Publish one message; raise `aiomqtt.MqttError` when the connection is down."""

    def publish_now(self, messages: list[tuple[str, bytes]]) -> None:
        """Queue retained QoS 0 messages without waiting, written out together; raise when disconnected."""
