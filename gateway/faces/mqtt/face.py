"""The MQTT bridge as a face of the contract (`gateway.faces.contract.Face`), so the app wires it like the others.

MQTT listens on no port: the gateway is a client of a broker. So its start is the bridge's
(connecting in the background), its listeners are none, and its `stop` is the bridge's (say
`offline`, then disconnect), which the app bounds like every face's after the devices' safe-state
pass began. Its TLS comes from its own URL (`mqtts://`), never from the server's certificate.
"""

from __future__ import annotations

import ssl

from gateway.faces.mqtt.bridge import MqttBridge

#: Seconds the bridge's stop may take (`offline` at QoS 1, then the broker's DISCONNECT; bounded inside too).
MQTT_STOP_S = 3.5


class MqttFace:
    """The face contract over one `MqttBridge`."""

    name = "MQTT bridge"
    stop_deadline_s = MQTT_STOP_S

    def __init__(self, bridge: MqttBridge) -> None:
        self.bridge = bridge

    async def start(self, tls: ssl.SSLContext | None) -> None:
        """Start exporting and connecting (the gateway never waits for the broker; `tls` is the server's: unused)."""
        self.bridge.start()

    def stop_listening(self) -> None:
        """Nothing: the bridge accepts no connections (its broker link ends in `stop`)."""

    def abort_connections(self) -> None:
        """Nothing: its one connection, to the broker, is ended by `stop` (bounded by the app)."""

    async def cleanup(self) -> None:
        """Nothing: no listener to release."""

    async def stop(self) -> None:
        """The bridge's stop: `offline`, then disconnect (looked up now, so a replaced stop is the one run)."""
        await self.bridge.stop()

    def listeners(self) -> dict[str, str | None]:
        """None: the gateway is the broker's client (its URL, with credentials, is not logged here)."""
        return {}
