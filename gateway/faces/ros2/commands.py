"""Command topics: what a ROS publisher writes on a device's command topic becomes a command, under a lease.

Every command topic of the ROS naming rule (`gateway.ros.names.RosNames.command_topics`:
`<namespace>/cmd/led`, ros-thymio's `<namespace>/led`, ...) is a subscription of the device's node.
A sample is decoded by the shared type layer and run as that device's command by a client of the
core that stands for the topic's ROS publishers, so the device leases what it drives to that client.

The lease rule: while at least one ROS publisher is matched on the topic, its client holds the lease;
when the last one leaves the graph (its node ends, destroys the publisher, or its participant's lease
runs out after a crash), the client leaves, the lease ends (`LeaseEnd.CLIENT_GONE`) and the device
puts what it drove in its safe state. The next publisher gets a new client.

Commands keep the newest value: while one runs, a newer sample replaces the waiting one (a ROS
publisher at 100 Hz does not pile commands up behind a slow device). Bad input never reaches a
device: undecodable CDR and a publisher of another type on the topic are dropped, counted, and
logged once per interval (`BadInput`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from gateway.core.client import Client, Hub
from gateway.credentials import OPEN_ACCESS
from gateway.errors import GatewayError
from gateway.ros.cdr import CdrError
from gateway.ros.typesupport import TypeSupport
from gateway.throttled_logs import RateLimitedLog

log = logging.getLogger(__name__)

#: Seconds between two log lines of one kind of bad input.
BAD_INPUT_LOG_S = 10.0


class Reader(Protocol):
    """What a command topic reads from (a `gateway.faces.ros2.dds.RawReader`)."""

    def take(self) -> list[Any]:
        """The samples waiting, each with `cdr` (bytes)."""


class BadInput:
    """Counts what the graph sent that could not be a command, and logs each kind once per interval."""

    def __init__(self, interval_s: float = BAD_INPUT_LOG_S) -> None:
        self.malformed = 0
        self.wrong_type = 0
        self.refused = 0
        self._malformed_log = RateLimitedLog("malformed ROS 2 samples", interval_s)
        self._wrong_type_log = RateLimitedLog("ROS 2 publishers of the wrong type", interval_s)
        self._refused_log = RateLimitedLog("refused ROS 2 commands", interval_s)

    def on_malformed(self, topic: str, error: Exception) -> None:
        """A sample whose CDR does not decode as the topic's type: dropped."""
        self.malformed += 1
        self._malformed_log.log("dropped a malformed sample on %s: %s", topic, error)

    def on_wrong_type(self, topic: str, offered: str, expected: str) -> None:
        """A ROS publisher on a command topic with another type: DDS never matches it, nothing arrives."""
        self.wrong_type += 1
        self._wrong_type_log.log("a publisher of %s on %s is ignored: the topic's type is %s", offered, topic, expected)

    def on_refused(self, topic: str, error: GatewayError) -> None:
        """A command the gateway refused (invalid argument, device not connected, ...)."""
        self.refused += 1
        self._refused_log.log("command from %s refused: %s", topic, error)


class CommandTopic:
    """One command topic: decode, run as the device's command, and hold the lease while publishers are matched."""

    def __init__(
        self, hub: Hub, name: str, device: str, bus_type: str, support: TypeSupport, bad_input: BadInput
    ) -> None:
        self.hub = hub
        #: The ROS name (`/thymio/led`).
        self.name = name
        self.device = device
        self.bus_type = bus_type
        self.support = support
        self.bad_input = bad_input
        self.reader: Reader | None = None
        #: Publishers matched now (from DDS's subscription-matched status).
        self.publishers = 0
        self.commands = 0
        self._client: Client | None = None
        self._pending: dict[str, Any] | None = None
        self._worker: asyncio.Task[None] | None = None

    @property
    def client_id(self) -> str | None:
        """The id of the client that stands for the topic's publishers now (None: no publisher, no lease)."""
        return None if self._client is None else self._client.id

    def on_data(self) -> None:
        """Take what arrived; keep the newest command that decodes, and run it."""
        if self.reader is None:
            return
        for received in self.reader.take():
            try:
                self._pending = self.support.decode(received.cdr)
            except CdrError as error:
                self.bad_input.on_malformed(self.name, error)
        if self._pending is not None and (self._worker is None or self._worker.done()):
            self._worker = asyncio.create_task(self._run(), name=f"ros2-command {self.name}")

    def on_matched(self, count: int) -> None:
        """The number of matched publishers changed; at 0 the lease ends (the device goes to its safe state)."""
        self.publishers = count
        if count == 0:
            self._end_lease()

    def _end_lease(self) -> None:
        self._pending = None
        client, self._client = self._client, None
        if client is not None:
            log.info("the last ROS publisher left %s: %s's lease ends", self.name, self.device)
            client.leave()

    def _ensure_client(self) -> Client:
        if self._client is None:
            client = Client(self.hub, "ros2", "cdr")
            # DDS has no authentication: the domain's reach (loopback by default) is the access rule.
            client.credential = OPEN_ACCESS
            client.join()
            self._client = client
        return self._client

    async def _run(self) -> None:
        while self._pending is not None:
            data, self._pending = self._pending, None
            client = self._ensure_client()
            try:
                await client.command(self.device, self.bus_type, data, None)
                self.commands += 1
            except GatewayError as error:
                self.bad_input.on_refused(self.name, error)
            if self.publishers == 0 and self._pending is None:
                # The publisher left while its command ran: the lease it just took ends with it.
                self._end_lease()

    def close(self) -> None:
        """Stop: end the lease (the gateway's stop puts every device in its safe state anyway)."""
        if self._worker is not None:
            self._worker.cancel()
        self._end_lease()


def matcher(topics: dict[str, CommandTopic], bad_input: BadInput) -> Callable[[str, str], None]:
    """The participant's `on_publication(dds topic, dds type)`: flags a publisher of another type on a command topic."""

    def on_publication(dds_topic: str, dds_type: str) -> None:
        topic = topics.get(dds_topic)
        if topic is not None and dds_type != topic.support.dds_name:
            bad_input.on_wrong_type(topic.name, dds_type, topic.support.dds_name)

    return on_publication
