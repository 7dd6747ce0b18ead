"""Which gateway devices are TDM nodes, and their stable 16-byte node and group ids."""

from __future__ import annotations

import uuid

#: Device kinds shown as TDM nodes (each device is one node: the one its commands address).
NODE_KINDS = frozenset({"aseba"})
_NAMESPACE = uuid.UUID("0b5e5a9c-7d3f-4c57-9a0e-6b1f3c2d4e8a")


def node_id(device: str) -> bytes:
    """The node id of `device`: the same on every run and for every client."""
    return uuid.uuid5(_NAMESPACE, f"node/{device}").bytes


def group_id(device: str) -> bytes:
    """The id of the device's group (each node is alone in its group)."""
    return uuid.uuid5(_NAMESPACE, f"group/{device}").bytes


def is_node(kind: str) -> bool:
    """True when devices of `kind` are shown to TDM clients."""
    return kind in NODE_KINDS
