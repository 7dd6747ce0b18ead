"""Which gateway devices are TDM nodes, their stable 16-byte node and group ids, and one node per robot."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol, TypeVar

#: Device kinds shown as TDM nodes (each device is one node: the one its commands address).
NODE_KINDS = frozenset({"aseba"})
_NAMESPACE = uuid.UUID("0b5e5a9c-7d3f-4c57-9a0e-6b1f3c2d4e8a")


class NodeDevice(Protocol):
    """What the folding reads of a device (a `DeviceHandle` of the client core)."""

    @property
    def status(self) -> str:
        """The device's availability ("connected", ...)."""

    @property
    def identity(self) -> str | None:
        """The robot's own identity (a Thymio's UUID), None when unknown."""

    @property
    def connected_since(self) -> float | None:
        """When it last connected (monotonic s), None while it is not connected."""


DeviceT = TypeVar("DeviceT", bound=NodeDevice)


def node_id(device: str) -> bytes:
    """The node id of `device`: the same on every run and for every client."""
    return uuid.uuid5(_NAMESPACE, f"node/{device}").bytes


def group_id(device: str) -> bytes:
    """The id of the device's group (each node is alone in its group)."""
    return uuid.uuid5(_NAMESPACE, f"group/{device}").bytes


def is_node(kind: str) -> bool:
    """True when devices of `kind` are shown to TDM clients."""
    return kind in NODE_KINDS


def one_per_robot(devices: Sequence[DeviceT]) -> list[DeviceT]:
    """`devices` (in config order) with one device per robot: the others reaching the same robot left out.

    Devices with the same identity (a Thymio on USB and on a radio dongle: the same UUID) are one
    robot, shown through the one connected longest (then the first in `devices`), so a link that
    comes back does not take the robot away from the link it is shown on; while none is
    connected, the first stands for it. A device without an identity is its own robot.
    """
    chosen: dict[str, DeviceT] = {}
    for device in devices:
        if device.identity is None:
            continue
        best = chosen.get(device.identity)
        if best is None or _rank(device) < _rank(best):
            chosen[device.identity] = device
    return [device for device in devices if device.identity is None or chosen[device.identity] is device]


def _rank(device: NodeDevice) -> tuple[int, float]:
    """Connected before not connected, then the longest connected (ties keep the earlier: `<` is strict)."""
    since = device.connected_since
    if device.status != "connected" or since is None:
        return (1, 0.0)
    return (0, since)
