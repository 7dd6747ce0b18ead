"""A Cyclone DDS participant that writes and takes raw CDR, as rmw does (the `ros2` extra).

Samples are never built as Cyclone's Python objects: the shared type layer encodes them
(`gateway.ros.typesupport`), and this module writes those bytes as they are (`ddspy_write`, the call
`DataWriter.write` makes after serializing) and takes received bytes as they came (`ddspy_take`),
so there is one CDR encoder and decoder per type. A topic still needs a Cyclone type: it names the
DDS type, Cyclone checks each raw sample against it, and announces it (`gateway.faces.ros2.idl`).

Cyclone runs its listeners on its own threads: `RawReader` hands every event to the event loop with
`call_soon_threadsafe`, and nothing else here is called off the loop.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import quoteattr

from cyclonedds._clayer import ddspy_take, ddspy_write, ddspy_write_ts
from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication, DcpsEndpoint
from cyclonedds.core import InstanceState, Listener, SampleState, ViewState
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from gateway.faces.ros2.qos import TopicQos

log = logging.getLogger(__name__)

#: Every sample state: take what is there, read or not.
_ANY = SampleState.Any | ViewState.Any | InstanceState.Any
#: Samples taken from a reader at once.
TAKE_BATCH = 64
#: eProsima's DDS vendor id (Fast DDS, the default RMW of ROS 2), as Cyclone's configuration writes it.
EPROSIMA_VENDOR = "1.15"


def domain_config(interfaces: tuple[str, ...]) -> str:
    """Cyclone's XML configuration: DDS on `interfaces` only (multicast allowed on them), nothing else.

    Deleting a writer does not linger (Cyclone waits up to 1 s by default, per writer, for readers to
    acknowledge what it wrote): the participant is deleted on the event loop at shutdown, and a ROS
    subscriber that vanished without a goodbye would hold every stream's writer for that second, the
    devices' safe states waiting behind them.

    The XTypes type information eProsima's peers (vendor 1.15) announce is ignored, so their endpoints
    match by type name, as rmw does: Fast DDS 3 (ROS 2 Kilted) announces type objects Cyclone 11
    refuses as invalid (any type with an array or a sequence) and declares its types appendable where
    ours are final, so without this no Kilted reader of a stream and no Kilted writer of an
    array-typed command ever matched. The type hashes in USER_DATA still say which type each side has.
    """
    listed = "".join(f'<NetworkInterface name={quoteattr(name)} multicast="true"/>' for name in interfaces)
    return (
        '<CycloneDDS><Domain id="any"><General>'
        f"<Interfaces>{listed}</Interfaces><AllowMulticast>true</AllowMulticast></General>"
        f"<Compatibility><IgnoreTypeInformation>{EPROSIMA_VENDOR}</IgnoreTypeInformation></Compatibility>"
        "<Internal><WriterLingerDuration>0 s</WriterLingerDuration></Internal></Domain></CycloneDDS>"
    )


def cyclone_qos(qos: TopicQos, type_hash: str | None) -> Qos:
    """Cyclone's QoS of a profile, with `typehash=<hash>;` in USER_DATA as rmw puts it there."""
    policies: list[Any] = [
        Policy.Reliability.Reliable(0) if qos.reliable else Policy.Reliability.BestEffort,
        Policy.History.KeepLast(qos.depth),
        Policy.Durability.TransientLocal if qos.transient_local else Policy.Durability.Volatile,
    ]
    if type_hash is not None:
        policies.append(Policy.Userdata(f"typehash={type_hash};".encode("ascii")))
    return Qos(*policies)


def gid_of(guid: uuid.UUID) -> bytes:
    """The 16 bytes of a DDS GUID, as rmw's `Gid` holds them."""
    return guid.bytes


class RawWriter:
    """A DataWriter of raw CDR (with its 4-byte encapsulation header) on one topic."""

    def __init__(self, writer: DataWriter[Any]) -> None:
        self._writer = writer
        self.gid = gid_of(writer.guid)

    def write(self, cdr: bytes, timestamp_ns: int | None = None) -> None:
        """Write one sample (`timestamp_ns`: its source timestamp, ns since the epoch; None: now)."""
        if timestamp_ns is None:
            result = ddspy_write(self._writer._ref, cdr)
        else:
            result = ddspy_write_ts(self._writer._ref, cdr, timestamp_ns)
        if result < 0:
            raise OSError(f"DDS write failed with code {result}")

    def subscribers(self) -> int:
        """How many readers are matched now."""
        return len(self._writer.get_matched_subscriptions())


@dataclass(frozen=True, slots=True)
class Received:
    """One sample taken from a reader: its raw CDR and the instance handle of the writer that sent it."""

    cdr: bytes
    publication: int


class RawReader:
    """A DataReader of raw CDR on one topic; `on_data` and `on_matched(count)` are called on the loop."""

    def __init__(
        self,
        participant: DomainParticipant,
        topic: Topic[Any],
        qos: Qos,
        loop: asyncio.AbstractEventLoop,
        on_data: Callable[[], None],
        on_matched: Callable[[int], None],
    ) -> None:
        def data_available(_reader: object) -> None:
            loop.call_soon_threadsafe(on_data)

        def subscription_matched(_reader: object, status: Any) -> None:
            loop.call_soon_threadsafe(on_matched, int(status.current_count))

        self._listener = Listener(  # type: ignore[no-untyped-call]
            on_data_available=data_available, on_subscription_matched=subscription_matched
        )
        self._reader: DataReader[Any] = DataReader(participant, topic, qos, self._listener)
        self.gid = gid_of(self._reader.guid)

    def take(self) -> list[Received]:
        """Every valid sample waiting (at most `TAKE_BATCH`); an unregistered or disposed writer is no sample."""
        taken = ddspy_take(self._reader._ref, _ANY, TAKE_BATCH)
        if isinstance(taken, int):
            raise OSError(f"DDS take failed with code {taken}")
        return [Received(bytes(data), info.publication_handle) for data, info in taken if info.valid_data]

    def publishers(self) -> int:
        """How many writers are matched now."""
        return len(self._reader.get_matched_publications())


class Participant:
    """One DDS domain participant of the gateway: raw topics, writers and readers; `close` deletes them all."""

    def __init__(self, domain_id: int, interfaces: tuple[str, ...], loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._domain = Domain(domain_id, domain_config(interfaces))
        self._participant = DomainParticipant(domain_id)
        self.gid = gid_of(self._participant.guid)
        self._topics: dict[str, Topic[Any]] = {}
        self._publications: BuiltinDataReader | None = None
        self._publication_listener: Listener | None = None

    def _topic(self, name: str, data_type: type[Any]) -> Topic[Any]:
        topic = self._topics.get(name)
        if topic is None:
            topic = self._topics[name] = Topic(self._participant, name, data_type)
        return topic

    def writer(self, name: str, data_type: type[Any], qos: TopicQos, type_hash: str | None) -> RawWriter:
        """A raw writer on DDS topic `name` (`rt/...`) of Cyclone type `data_type`, announcing `type_hash`."""
        return RawWriter(DataWriter(self._participant, self._topic(name, data_type), cyclone_qos(qos, type_hash)))

    def reader(
        self,
        name: str,
        data_type: type[Any],
        qos: TopicQos,
        type_hash: str | None,
        on_data: Callable[[], None],
        on_matched: Callable[[int], None],
    ) -> RawReader:
        """A raw reader on DDS topic `name` of Cyclone type `data_type`, its events handed to the loop."""
        topic = self._topic(name, data_type)
        return RawReader(self._participant, topic, cyclone_qos(qos, type_hash), self._loop, on_data, on_matched)

    def watch_publications(self, on_publication: Callable[[str, str], None]) -> None:
        """Call `on_publication(topic_name, type_name)` on the loop for every writer discovered in the domain."""

        def data_available(_reader: object) -> None:
            reader = self._publications
            if reader is None:  # called while the reader is being made: it is taken at the next sample
                return
            for endpoint in reader.take(TAKE_BATCH):
                if isinstance(endpoint, DcpsEndpoint):
                    self._loop.call_soon_threadsafe(on_publication, endpoint.topic_name, endpoint.type_name)

        self._publication_listener = Listener(on_data_available=data_available)  # type: ignore[no-untyped-call]
        self._publications = BuiltinDataReader(
            self._participant, BuiltinTopicDcpsPublication, listener=self._publication_listener
        )

    def close(self) -> None:
        """Delete the participant with every topic, writer and reader in it (its writers say goodbye), then the domain.

        Cyclone's Python binding deletes an entity in its finalizer only; calling it is how its own
        code deletes one on purpose, and a second call does nothing.
        """
        self._participant.__del__()
        self._domain.__del__()
