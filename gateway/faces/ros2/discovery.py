"""`ros_discovery_info`: which ROS node owns which DDS reader and writer, as rmw publishes it.

DDS knows participants and endpoints, not nodes. Every rmw publishes one
`rmw_dds_common/msg/ParticipantEntitiesInfo` per participant (reliable, keep last 1, transient
local) listing its nodes, each with the GIDs of its readers and writers; `ros2 node list` and the
graph API of rclpy read it. The gateway's participant holds its own node and one node per device.

These are rmw's internal types, not bus types, so Cyclone's own IDL classes carry them (the shared
type layer encodes the bus's types; these never meet it). Jazzy's `Gid` is 16 bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cyclonedds.idl.types import uint8

from gateway.faces.ros2.dds import RawWriter
from gateway.faces.ros2.idl import bounded_string, declare, fixed, sequence

#: The DDS topic rmw publishes node identities on (no `rt/` prefix: it is no ROS topic).
TOPIC = "ros_discovery_info"
#: rosidl's hash of `rmw_dds_common/msg/ParticipantEntitiesInfo` (Jazzy), announced in USER_DATA.
TYPE_HASH = "RIHS01_91a0593bacdcc50ea9bdcf849a938b128412cc1ea821245c663bcd26f83c295e"
#: The longest node name or namespace rmw accepts (`string<=256`).
MAX_NAME = 256


#: `rmw_dds_common/msg/Gid`: an endpoint's or participant's GUID (`char[16] data`).
Gid = declare("Gid", "rmw_dds_common::msg::dds_::Gid_", {"data": fixed(uint8, 16)})
#: `rmw_dds_common/msg/NodeEntitiesInfo`: one node, its namespace and name, its readers' and writers' GIDs.
NodeEntitiesInfo = declare(
    "NodeEntitiesInfo",
    "rmw_dds_common::msg::dds_::NodeEntitiesInfo_",
    {
        "node_namespace": bounded_string(MAX_NAME),
        "node_name": bounded_string(MAX_NAME),
        "reader_gid_seq": sequence(Gid),
        "writer_gid_seq": sequence(Gid),
    },
)
#: `rmw_dds_common/msg/ParticipantEntitiesInfo`: a participant's GID and its nodes.
ParticipantEntitiesInfo = declare(
    "ParticipantEntitiesInfo",
    "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_",
    {"gid": Gid, "node_entities_info_seq": sequence(NodeEntitiesInfo)},
)


@dataclass(slots=True)
class Node:
    """A ROS node of the gateway: namespace (`/` or `/a/b`), name, and its endpoints' GIDs (16 bytes each)."""

    namespace: str
    name: str
    readers: list[bytes] = field(default_factory=list)
    writers: list[bytes] = field(default_factory=list)


def participant_info(participant_gid: bytes, nodes: Iterable[Node]) -> Any:
    """The `ros_discovery_info` sample of a participant holding `nodes`."""
    return ParticipantEntitiesInfo(
        gid=Gid(list(participant_gid)),
        node_entities_info_seq=[
            NodeEntitiesInfo(
                node_namespace=node.namespace,
                node_name=node.name,
                reader_gid_seq=[Gid(list(gid)) for gid in node.readers],
                writer_gid_seq=[Gid(list(gid)) for gid in node.writers],
            )
            for node in nodes
        ],
    )


def encode(info: Any) -> bytes:
    """The sample's CDR, padded to 4 bytes as Cyclone's own writer pads it."""
    data: bytes = info.serialize()
    return data.ljust((len(data) + 3) & ~3, b"\0")


class Announcer:
    """Publishes the participant's nodes again whenever one of them gains an endpoint."""

    def __init__(self, writer: RawWriter, participant_gid: bytes) -> None:
        self._writer = writer
        self._gid = participant_gid
        self.published = 0

    def announce(self, nodes: Iterable[Node]) -> None:
        """Write the current node list (transient local: late joiners get the last one)."""
        self._writer.write(encode(participant_info(self._gid, nodes)))
        self.published += 1
