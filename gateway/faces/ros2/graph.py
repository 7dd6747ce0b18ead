"""The gateway on a ROS 2 graph: its node and one node per device, their topics, and what arrives on them.

Names come from the one ROS naming rule (`gateway.ros.names.RosNames`, as the rosbridge face uses
it): a device's node is `<its namespace>/<its id as a ROS name>` (`/thymio/thymio_demo`), its
streams are published at their ROS names (`/thymio/node_1/buttons`), every controller state also as
`sensor_msgs/msg/Joy` on the sibling `joy` topic, and its command topics are subscriptions. The
gateway's own node (`/<node_name>`) publishes `hwgateway/msg/GatewayStatus` on `/<node_name>/status`
once a second, latched.

A stream's writer is made at its first sample, with the sample's type (topics appear as devices
publish, as on the bus). Every sample is encoded once by the shared type layer, cached on the sample
(`Sample.encoded("cdr", ...)`), and written raw with the gateway's receive time as its source
timestamp. Each new endpoint is announced on `ros_discovery_info` (at most once per loop iteration).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.bus import Outgoing, Sample
from gateway.core.client import Client, Hub
from gateway.core.config import Ros2Config
from gateway.credentials import OPEN_ACCESS
from gateway.faces.ros2 import discovery, qos
from gateway.faces.ros2.commands import BadInput, CommandTopic, matcher
from gateway.faces.ros2.dds import Participant, RawWriter
from gateway.faces.ros2.idl import idl_type
from gateway.ros import names as ros_names
from gateway.ros.cdr import CdrError
from gateway.ros.joy import CONTROLLER_TYPE, joy_of_controller_state, joy_topic
from gateway.ros.typesupport import JOY, TypeSupport, for_bus_type
from gateway.throttled_logs import RateLimitedLog

log = logging.getLogger(__name__)

#: Seconds between two status messages of the gateway's node.
STATUS_PERIOD_S = 1.0
#: The bus type of the gateway's status.
STATUS_TYPE = "hwgateway/GatewayStatus"
#: The key under which a sample's CDR is cached (shared with any other user of the type layer's CDR).
CDR_KEY = "cdr"


def dds_topic(ros_name: str) -> str:
    """The DDS topic of a ROS topic name (`/a/b` -> `rt/a/b`), as rmw names it."""
    return "rt" + ros_name


def node_name(device: str) -> str:
    """A device's node name: its id as a ROS name (`thymio-demo` -> `thymio_demo`)."""
    return ros_names.ros_path([device])


@dataclass(slots=True)
class Stream:
    """A bus topic's writers: its own type's, and Joy's for a controller state."""

    writer: RawWriter
    support: TypeSupport
    joy: RawWriter | None = None


class Ros2Graph:
    """The participant, the nodes and their endpoints; a client of the core reading every sample."""

    def __init__(
        self,
        hub: Hub,
        config: Ros2Config,
        names: ros_names.RosNames,
        status: Callable[[], dict[str, Any]],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.hub = hub
        self.config = config
        self.names = names
        self._status = status
        self._loop = loop
        self.participant = Participant(config.domain_id, config.interfaces, loop)
        self.nodes: dict[str, discovery.Node] = {"": discovery.Node("/", config.node_name)}
        self.bad_input = BadInput()
        self.published = 0
        self.encode_failures = 0
        self._streams: dict[str, Stream | None] = {}
        self._encode_log = RateLimitedLog("ROS 2 samples that could not be encoded", 10.0)
        self._announce_due = False
        self.announcer = discovery.Announcer(
            self.participant.writer(
                discovery.TOPIC, discovery.ParticipantEntitiesInfo, qos.DISCOVERY, discovery.TYPE_HASH
            ),
            self.participant.gid,
        )
        status_support = for_bus_type(STATUS_TYPE)
        self._status_support = status_support
        status_name = "/" + config.node_name + "/status"
        self._status_writer = self.participant.writer(
            dds_topic(status_name), idl_type(status_support.msg), qos.LATCHED, status_support.hash
        )
        self.nodes[""].writers.append(self._status_writer.gid)
        self.commands: dict[str, CommandTopic] = {}
        self._subscribe_commands()
        self.participant.watch_publications(matcher(self.commands, self.bad_input))
        self.client = Client(hub, "ros2", "cdr")
        self.client.credential = OPEN_ACCESS  # the operator enabled the face: it publishes every device
        self._status_task: asyncio.Task[None] | None = None

    # -- nodes and discovery -----------------------------------------------------------------

    def _node(self, device: str) -> discovery.Node:
        node = self.nodes.get(device)
        if node is None:
            namespace = self.names.namespaces.get(device) or "/" + ros_names.ros_path([device])
            node = self.nodes[device] = discovery.Node(namespace, node_name(device))
            self._announce_soon()
        return node

    def _announce_soon(self) -> None:
        if not self._announce_due:
            self._announce_due = True
            self._loop.call_soon(self._announce)

    def _announce(self) -> None:
        self._announce_due = False
        self.announcer.announce(self.nodes.values())

    # -- commands ----------------------------------------------------------------------------

    def _subscribe_commands(self) -> None:
        for endpoint in self.names.command_topics.values():
            try:
                support = for_bus_type(endpoint.type)
            except (KeyError, TypeError) as error:
                log.warning("%s gets no ROS 2 command topic: %s", endpoint.name, error)
                continue
            topic = CommandTopic(self.hub, endpoint.name, endpoint.device, endpoint.type, support, self.bad_input)
            topic.reader = self.participant.reader(
                dds_topic(endpoint.name),
                idl_type(support.msg),
                qos.COMMAND,
                support.hash,
                topic.on_data,
                topic.on_matched,
            )
            self.commands[dds_topic(endpoint.name)] = topic
            self._node(endpoint.device).readers.append(topic.reader.gid)

    # -- streams -----------------------------------------------------------------------------

    def _stream(self, sample: Sample) -> Stream | None:
        topic = sample.topic
        if topic in self._streams:
            return self._streams[topic]
        stream = None
        name = self.names.topic(topic)
        try:
            support = for_bus_type(sample.type)
        except (KeyError, TypeError) as error:
            log.warning("bus topic %s (%s) is not published on ROS 2: %s", topic, sample.type, error)
            name = None
        if name is not None:
            node = self._node(topic.partition("/")[0])
            writer = self.participant.writer(dds_topic(name), idl_type(support.msg), qos.STREAM, support.hash)
            node.writers.append(writer.gid)
            stream = Stream(writer, support)
            if sample.type == CONTROLLER_TYPE:
                stream.joy = self.participant.writer(
                    dds_topic(joy_topic(name)), idl_type(JOY.msg), qos.STREAM, JOY.hash
                )
                node.writers.append(stream.joy.gid)
            self._announce_soon()
        self._streams[topic] = stream
        return stream

    def _direct(self, item: Outgoing) -> bool:
        """Write a sample at once (DDS writes never wait); device events need nothing here."""
        if isinstance(item, Sample):
            self.publish(item)
        return True

    def publish(self, sample: Sample) -> None:
        """Write one bus sample on its ROS 2 topic (and Joy for a controller state)."""
        stream = self._stream(sample)
        if stream is None:
            return
        support = stream.support
        stamp_ns = int(sample.recv_stamp * 1e9)
        try:
            stream.writer.write(sample.encoded(CDR_KEY, lambda: support.encode(sample.data())), stamp_ns)
            if stream.joy is not None:
                stream.joy.write(JOY.encode(joy_of_controller_state(sample.data())), stamp_ns)
        except (CdrError, TypeError, ValueError, OSError) as error:
            self.encode_failures += 1
            self._encode_log.log("a sample of %s was not sent on ROS 2: %s", sample.topic, error)
            return
        self.published += 1

    # -- status ------------------------------------------------------------------------------

    def publish_status(self) -> None:
        """Write the gateway's status once."""
        body = self._status()
        status = {
            "status": body["status"],
            "reasons": body["reasons"],
            "version": body["version"],
            "uptime_s": body["uptime_s"],
            "clients": body["clients"],
            "devices": [
                {"id": d["id"], "kind": d["kind"], "status": d["status"], "detail": d["detail"] or ""}
                for d in body["devices"]
            ],
        }
        self._status_writer.write(self._status_support.encode(status))

    async def _publish_status(self) -> None:
        while True:
            try:
                self.publish_status()
            except (CdrError, TypeError, ValueError, OSError) as error:
                self._encode_log.log("the gateway's status was not sent on ROS 2: %s", error)
            await asyncio.sleep(STATUS_PERIOD_S)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Announce the nodes, publish the status, and attach to the bus (every topic)."""
        for handle in self.hub.devices():
            self._node(handle.id)
        self._announce()
        # Direct first: what `join` offers (every device's availability) must not wait in the mailbox,
        # or every later sample would queue behind it, unread.
        self.client.subscriber.direct = self._direct
        self.client.join()
        self.client.subscribe(["**"], None)
        self._status_task = asyncio.create_task(self._publish_status(), name="ros2-status")

    def stop(self) -> None:
        """Detach from the bus, end every command lease, and delete the participant (its endpoints say goodbye)."""
        if self._status_task is not None:
            self._status_task.cancel()
        self.client.leave()
        for topic in self.commands.values():
            topic.close()
        with contextlib.suppress(Exception):  # a participant already gone: nothing more to delete
            self.participant.close()

    def health(self) -> dict[str, Any]:
        """Counters for `/healthz`: samples published, bad input dropped, commands run, publishers matched."""
        return {
            "available": True,
            "domain_id": self.config.domain_id,
            "interfaces": list(self.config.interfaces),
            "published": self.published,
            "encode_failures": self.encode_failures,
            "malformed": self.bad_input.malformed,
            "wrong_type": self.bad_input.wrong_type,
            "refused": self.bad_input.refused,
            "commands": sum(topic.commands for topic in self.commands.values()),
            "command_publishers": {
                topic.name: topic.publishers for topic in self.commands.values() if topic.publishers
            },
        }
