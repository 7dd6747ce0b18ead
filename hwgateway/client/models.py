"""What the client hands back: samples, devices, availability changes and e-stop outcomes, as frozen dataclasses."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from gateway.errors import InvalidArgument

__all__ = ["DeviceEvent", "DeviceInfo", "EstopOutcome", "Sample", "typed_message"]


@functools.cache
def _messages() -> ModuleType:
    """The message types, imported on the first typed sample: `hwgateway estop` needs none of them."""
    import gateway.messages

    return gateway.messages


def typed_message(type_name: str, data: object) -> Any | None:
    """`data` as the registered dataclass of `type_name`, or None when the type is unknown or does not fit it."""
    messages = _messages()  # cached: this runs once per sample
    info = messages.REGISTRY.get(type_name)
    if info is None:
        return None
    try:
        return messages.from_plain(info.cls, data)
    except (InvalidArgument, TypeError, ValueError):
        # A newer gateway may send a field this version does not know: keep the plain data only.
        return None


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample of a subscribed topic (a `state` message).

    `stamp` is the device's time of the sample and `recv_stamp` the gateway's receive time, both in
    seconds since the Unix epoch; `seq` counts samples per topic (a gap of n means n skipped).
    `data` is the message as plain data; `message` is the same as the gateway's dataclass (for example
    `gateway.messages.creos.ControllerState`) when this version knows the type, else None.
    """

    topic: str
    type: str
    seq: int
    stamp: float
    recv_stamp: float
    data: Mapping[str, Any]
    message: Any | None = field(default=None, compare=False)

    @property
    def device(self) -> str:
        """The device id: the topic's first segment."""
        return self.topic.split("/", 1)[0]

    @classmethod
    def from_wire(cls, message: Mapping[str, Any], typed: bool = True) -> Sample:
        """Build a sample from a `state` message; `typed` also builds the dataclass."""
        data = message.get("data") or {}
        type_name = str(message.get("type", ""))
        return cls(
            topic=str(message.get("topic", "")),
            type=type_name,
            seq=int(message.get("seq", 0)),
            stamp=float(message.get("stamp", 0.0)),
            recv_stamp=float(message.get("recv_stamp", 0.0)),
            data=data,
            message=typed_message(type_name, data) if typed else None,
        )


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One entry of `list_devices`: availability, the message types it publishes and the commands it accepts."""

    id: str
    kind: str
    status: str
    detail: str
    publishes: tuple[str, ...]
    accepts: tuple[str, ...]
    topics: tuple[str, ...]
    capabilities: Mapping[str, Any]
    #: The session id (`hello.session`) holding the device's control lock, or None.
    locked_by: str | None
    #: The entry as the gateway sent it (fields newer than this client are kept here).
    raw: Mapping[str, Any] = field(compare=False, repr=False)

    @classmethod
    def from_wire(cls, entry: Mapping[str, Any]) -> DeviceInfo:
        """Build from one `list_devices` entry."""
        return cls(
            id=str(entry.get("id", "")),
            kind=str(entry.get("kind", "")),
            status=str(entry.get("status", "")),
            detail=str(entry.get("detail", "")),
            publishes=tuple(entry.get("publishes", ())),
            accepts=tuple(entry.get("accepts", ())),
            topics=tuple(entry.get("topics", ())),
            capabilities=dict(entry.get("capabilities", {})),
            locked_by=entry.get("locked_by"),
            raw=dict(entry),
        )


@dataclass(frozen=True, slots=True)
class DeviceEvent:
    """A `device` push: `status` is connecting, connected, disconnected or stopped; `stamp` in epoch seconds.

    `locked_by` is the session id holding the device's control lock, or None.
    """

    device: str
    kind: str
    status: str
    detail: str
    stamp: float
    locked_by: str | None = None

    @classmethod
    def from_wire(cls, message: Mapping[str, Any]) -> DeviceEvent:
        """Build from a `device` message."""
        return cls(
            device=str(message.get("device", "")),
            kind=str(message.get("kind", "")),
            status=str(message.get("status", "")),
            detail=str(message.get("detail", "")),
            stamp=float(message.get("stamp", 0.0)),
            locked_by=message.get("locked_by"),
        )


@dataclass(frozen=True, slots=True)
class EstopOutcome:
    """What `estop` did on one device: `ok`, or the `error` text of its failure or overrun."""

    device: str
    ok: bool
    error: str = ""
