"""The MQTT topic map (docs/mqtt.md): every topic the bridge publishes or reads is built or parsed here.

Under `<base>/<gateway>/`: `status` (retained `online`, last will `offline`), `devices` (retained
device list), `estop`, `release` (a peer's client left), `reply` (answers to our forwarded commands),
and per device `<device>/availability`, `<device>/set`, `<device>/response` and `<device>/<stream>`
(the bus topic `<device>/<stream>`). Stream names `availability`, `set` and `response` are reserved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Per-device topic names that are not bus streams.
RESERVED_STREAMS = frozenset({"availability", "set", "response"})
#: Gateway-level topic names.
GATEWAY_TOPICS = frozenset({"status", "devices", "estop", "release", "reply"})
#: How an imported device's id is formed from its gateway's name and its own id.
IMPORT_SEPARATOR = ":"

TopicKind = Literal["status", "devices", "estop", "release", "reply", "availability", "set", "response", "state"]


@dataclass(frozen=True, slots=True)
class ParsedTopic:
    """What an incoming topic names: its gateway, its kind, and the device and bus topic where there is one."""

    gateway: str
    kind: TopicKind
    device: str = ""
    bus_topic: str = ""


def imported_id(gateway: str, device: str) -> str:
    """The local id of `device` of gateway `gateway` (`<gateway>:<device>`)."""
    return f"{gateway}{IMPORT_SEPARATOR}{device}"


class TopicMap:
    """Topic names under `<base>/` for this gateway (`own`) and the others."""

    def __init__(self, base: str, own: str) -> None:
        self.base = base
        self.own = own

    def gateway(self, name: str, topic: str) -> str:
        """A gateway-level topic (`status`, `devices`, `estop`, `release`, `reply`) of gateway `name`."""
        return f"{self.base}/{name}/{topic}"

    def device(self, name: str, device: str, topic: str) -> str:
        """A per-device topic (`availability`, `set`, `response`) of `device` on gateway `name`."""
        return f"{self.base}/{name}/{device}/{topic}"

    def state(self, name: str, bus_topic: str) -> str:
        """Where the samples of bus topic `<device>/<stream>` of gateway `name` go."""
        return f"{self.base}/{name}/{bus_topic}"

    def subscriptions(self, importing: bool) -> list[str]:
        """The MQTT filters the bridge subscribes to: its own requests and every gateway's status, or all."""
        if importing:
            return [f"{self.base}/#"]
        return [f"{self.base}/{self.own}/#", f"{self.base}/+/status"]

    def parse(self, topic: str) -> ParsedTopic | None:
        """The meaning of an incoming topic, or None when it is not on the map."""
        parts = topic.split("/")
        if len(parts) < 3 or parts[0] != self.base or not parts[1]:
            return None
        gateway, rest = parts[1], parts[2:]
        if len(rest) == 1:
            return ParsedTopic(gateway, rest[0]) if rest[0] in GATEWAY_TOPICS else None  # type: ignore[arg-type]
        device = rest[0]
        if not device or not all(rest):
            return None
        if len(rest) == 2 and rest[1] in RESERVED_STREAMS:
            return ParsedTopic(gateway, rest[1], device)  # type: ignore[arg-type]
        return ParsedTopic(gateway, "state", device, "/".join(rest))
