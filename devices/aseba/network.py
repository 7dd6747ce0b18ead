"""One Aseba link and the nodes on it: discovery, descriptions, variables, events.

The network reads frames from the link, keeps a table of nodes (`NodeState`), broadcasts ListNodes
every `list_nodes_period_s` (discovery and keep-alive), asks each new node for its description,
and marks a node disconnected after `node_timeout_s` of silence, counted while the gateway is awake
(`gateway.silence`). A node of protocol 6 or later is asked for its UUID (GetDeviceInfo) as soon as
it is present, before its description, so the UUID usually arrives first; one that never answers
(the playground's) just has none: nothing waits for it. Variable reads collect every `Variables`
frame of the reply (a real Thymio splits them into 47-word frames). It knows nothing of the
gateway's bus or adapters: the adapter passes callbacks for node changes and user events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from gateway.silence import SilenceClock
from protocols.aseba.description import DescriptionAssembler, NodeDescription, VariablesReassembly
from protocols.aseba.framing import HOST_SOURCE, FrameReader
from protocols.aseba.messages import (
    DEVICE_INFO_PROTOCOL_VERSION,
    MIN_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    Description,
    DeviceInfo,
    DeviceInfoType,
    LocalEventDescription,
    Message,
    MessageType,
    NamedVariableDescription,
    NativeFunctionDescription,
    NodeSpecificError,
    UserMessage,
    WordMessage,
    command,
    decode,
    encode,
)
from protocols.errors import ProtocolError

log = logging.getLogger(__name__)

#: Words per GetVariables / SetVariables request: 258 payload words minus (dest, start).
MAX_REQUEST_WORDS = 256
#: Bytes read from the link at once.
READ_SIZE = 4096
#: GetDeviceInfo(UUID) requests sent to a node that does not answer, one every `UUID_RETRY_S` seconds.
MAX_UUID_REQUESTS = 3
UUID_RETRY_S = 2.0
#: Reports of VM errors, logged with the node id (they pause the node's VM).
_VM_ERRORS = {
    MessageType.ARRAY_ACCESS_OUT_OF_BOUNDS: "array access out of bounds",
    MessageType.DIVISION_BY_ZERO: "division by zero",
    MessageType.EVENT_EXECUTION_KILLED: "event execution killed",
}


class NodeError(Exception):
    """A request to a node failed (unknown node, timeout, node gone)."""


@dataclass(slots=True)
class NodeState:
    """What the network knows of one node: its id, protocol version, description once complete.

    `uuid`: the robot's own UUID once it answered GetDeviceInfo (None: not asked, no answer yet, or
    never: a node older than protocol 6, a simulator that does not implement it).
    """

    id: int
    protocol_version: int = 0
    description: NodeDescription | None = None
    connected: bool = True
    last_seen: float = field(default_factory=time.monotonic)
    assembler: DescriptionAssembler = field(default_factory=DescriptionAssembler)
    description_requested: float = 0.0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    uuid: uuid.UUID | None = None
    uuid_requests: int = 0
    uuid_requested: float = 0.0

    @property
    def name(self) -> str:
        """The node's type name (e.g. ``thymio-II``), empty until described."""
        return "" if self.description is None else self.description.name


NodeCallback = Callable[[NodeState], None]
EventCallback = Callable[[UserMessage], None]


class AsebaNetwork:
    """The nodes behind one byte stream; call `serve` in a task, then use the request methods.

    `on_node` is called whenever a node appears, is described, tells its UUID, or connects/disconnects;
    `on_event` with every user event a node sends. Times are in seconds.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        on_node: NodeCallback,
        on_event: EventCallback,
        list_nodes_period_s: float = 1.0,
        node_timeout_s: float = 3.0,
        request_timeout_s: float = 2.0,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._frames = FrameReader()
        self._on_node = on_node
        self._on_event = on_event
        self.list_nodes_period_s = list_nodes_period_s
        self.node_timeout_s = node_timeout_s
        self.request_timeout_s = request_timeout_s
        self.nodes: dict[int, NodeState] = {}
        self._reads: dict[int, list[VariablesReassembly]] = {}
        self._read_done = asyncio.Condition()
        self._locks: dict[int, asyncio.Lock] = {}
        #: Frames that could not be decoded (garbage on a serial line, truncated payloads).
        self.protocol_errors = 0

    # -- serving -----------------------------------------------------------------------------------

    async def serve(self) -> None:
        """Read and dispatch frames and run discovery until the link closes (raise `ConnectionError`)."""
        pinger = asyncio.create_task(self._discover(), name="aseba-discovery")
        try:
            while True:
                data = await self._reader.read(READ_SIZE)
                if not data:
                    raise ConnectionError("the Aseba link closed")
                self._frames.feed(data)
                await self._drain_frames()
        finally:
            pinger.cancel()
            await asyncio.gather(pinger, return_exceptions=True)

    async def _drain_frames(self) -> None:
        while True:
            try:
                frame = self._frames.next()
            except ProtocolError as error:
                # The stream lost its framing (noise on a serial line): the reader hunts for the
                # next NodePresent, which the periodic ListNodes brings within a period.
                self.protocol_errors += 1
                log.warning("aseba link resynchronizes: %s", error)
                continue
            if frame is None:
                return
            try:
                message = decode(frame)
            except ProtocolError as error:
                # A frame that does not decode means the framing is probably lost too.
                self.protocol_errors += 1
                self._frames.resynchronize()
                log.warning("aseba frame from node %d dropped, resynchronizing: %s", frame.source, error)
                continue
            await self._dispatch(message)

    async def _discover(self) -> None:
        # Silence counted while the gateway is awake: waking from a stall longer than the timeout,
        # a node has not yet had the time to answer this round's ListNodes (gateway/silence.py).
        silences: dict[int, SilenceClock] = {}
        while True:
            self.send(command(MessageType.LIST_NODES, PROTOCOL_VERSION))
            now = time.monotonic()
            for node in list(self.nodes.values()):
                silence = silences.get(node.id)
                if silence is None:
                    silence = silences[node.id] = SilenceClock(self.node_timeout_s, self.list_nodes_period_s, now)
                if silence.tick(now, node.last_seen) and node.connected:
                    node.connected = False
                    log.info("aseba node %d silent for %.1f s: disconnected", node.id, silence.silent_s)
                    self._on_node(node)
                elif node.connected and node.description is None and now - node.description_requested > 2.0:
                    self._request_description(node)
                if self._uuid_overdue(node, now):
                    self._request_uuid(node)
            await asyncio.sleep(self.list_nodes_period_s)

    def send(self, frame: bytes) -> None:
        """Queue frame bytes on the link."""
        self._writer.write(frame)

    def _node(self, source: int, protocol_version: int = 0) -> NodeState:
        node = self.nodes.get(source)
        if node is None:
            node = self.nodes[source] = NodeState(source, protocol_version)
            log.info("aseba node %d present (protocol %d)", source, protocol_version)
            self._on_node(node)
        node.last_seen = time.monotonic()
        if not node.connected:
            node.connected = True
            self._on_node(node)
        return node

    def _request_description(self, node: NodeState) -> None:
        node.description_requested = time.monotonic()
        node.assembler = DescriptionAssembler()
        self.send(command(MessageType.GET_NODE_DESCRIPTION, node.id, PROTOCOL_VERSION))

    def _uuid_overdue(self, node: NodeState, now: float) -> bool:
        """True when a node asked for its UUID has not answered in `UUID_RETRY_S` (a frame lost on a radio link)."""
        if not node.connected or node.uuid is not None or not 0 < node.uuid_requests < MAX_UUID_REQUESTS:
            return False
        return now - node.uuid_requested > UUID_RETRY_S

    def _request_uuid(self, node: NodeState) -> None:
        node.uuid_requests += 1
        node.uuid_requested = time.monotonic()
        self.send(command(MessageType.GET_DEVICE_INFO, node.id, DeviceInfoType.UUID))

    def _add_device_info(self, node: NodeState, info: DeviceInfo) -> None:
        if info.info != DeviceInfoType.UUID:
            return
        if len(info.data) != 16 or not any(info.data):
            # A nil UUID names no robot (every unset one would be the same "robot").
            log.warning("aseba node %d: unusable UUID %s ignored", node.id, info.data.hex())
            return
        found = uuid.UUID(bytes=info.data)
        if found != node.uuid:
            node.uuid = found
            log.info("aseba node %d: UUID %s", node.id, found)
            self._on_node(node)

    async def _dispatch(self, message: Message) -> None:
        if message.source == HOST_SOURCE:
            return  # another host's traffic, echoed by a switch
        if isinstance(message, WordMessage) and message.type is MessageType.NODE_PRESENT:
            version = message.words[0] if message.words else 0
            node = self._node(message.source, version)
            node.protocol_version = version
            if version < MIN_PROTOCOL_VERSION:
                log.warning("aseba node %d speaks protocol %d, older than %d", node.id, version, MIN_PROTOCOL_VERSION)
                return
            if version >= DEVICE_INFO_PROTOCOL_VERSION and node.uuid is None and not node.uuid_requests:
                self._request_uuid(node)  # first: its one-frame answer comes before the description's frames
            if node.description is None and not node.description_requested:
                self._request_description(node)
            return
        node = self._node(message.source)
        if isinstance(
            message, Description | NamedVariableDescription | LocalEventDescription | NativeFunctionDescription
        ):
            self._add_description_part(node, message)
        elif isinstance(message, DeviceInfo):
            self._add_device_info(node, message)
        elif isinstance(message, UserMessage):
            self._on_event(message)
        elif isinstance(message, WordMessage) and message.type is MessageType.VARIABLES:
            await self._add_variables(node.id, message.words[0], message.words[1:])
        elif isinstance(message, WordMessage) and message.type in _VM_ERRORS:
            log.warning("aseba node %d: %s at pc %s", node.id, _VM_ERRORS[message.type], message.words[:1])
        elif isinstance(message, NodeSpecificError):
            log.warning("aseba node %d: error at pc %d: %s", node.id, message.pc, message.message)
        elif isinstance(message, WordMessage) and message.type is MessageType.DISCONNECTED:
            node.connected = False
            self._on_node(node)

    def _add_description_part(
        self,
        node: NodeState,
        part: Description | NamedVariableDescription | LocalEventDescription | NativeFunctionDescription,
    ) -> None:
        if node.description is not None and not isinstance(part, Description):
            return  # a description asked for by another host
        try:
            node.assembler.add(part)
            if isinstance(part, Description):
                node.protocol_version = part.protocol_version
            if node.assembler.complete:
                node.description = node.assembler.result()
                node.ready.set()
                log.info("aseba node %d described: %s", node.id, node.description.name)
                self._on_node(node)
        except ProtocolError as error:
            self.protocol_errors += 1
            log.warning("aseba node %d: bad description (%s); asking again", node.id, error)
            node.description = None
            node.description_requested = 0.0

    async def _add_variables(self, node_id: int, start: int, values: tuple[int, ...]) -> None:
        reads = self._reads.get(node_id, [])
        for read in reads:
            read.add(start, values)
        if any(read.complete for read in reads):
            async with self._read_done:
                self._read_done.notify_all()

    # -- requests ----------------------------------------------------------------------------------

    async def wait_described(self, node_id: int, timeout_s: float) -> NodeState:
        """The node `node_id` once its description is complete; `NodeError` after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while node_id not in self.nodes:
            if time.monotonic() > deadline:
                raise NodeError(f"no Aseba node {node_id} on this link")
            await asyncio.sleep(0.02)
        node = self.nodes[node_id]
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await node.ready.wait()
        except TimeoutError:
            raise NodeError(f"Aseba node {node_id} did not finish its description in {timeout_s:g} s") from None
        return node

    async def get_variables(self, node_id: int, start: int, length: int) -> tuple[int, ...]:
        """Read `length` words at `start` of node `node_id`, reassembling split replies."""
        values: list[int] = []
        async with self._locks.setdefault(node_id, asyncio.Lock()):
            for offset in range(0, length, MAX_REQUEST_WORDS):
                count = min(MAX_REQUEST_WORDS, length - offset)
                values += await self._read(node_id, start + offset, count)
        return tuple(values)

    async def _read(self, node_id: int, start: int, length: int) -> tuple[int, ...]:
        read = VariablesReassembly(start, length)
        reads = self._reads.setdefault(node_id, [])
        reads.append(read)
        try:
            self.send(command(MessageType.GET_VARIABLES, node_id, start, length))
            async with self._read_done, asyncio.timeout(self.request_timeout_s):
                await self._read_done.wait_for(lambda: read.complete)
        except TimeoutError:
            raise NodeError(
                f"Aseba node {node_id} did not answer GetVariables({start}, {length}) in {self.request_timeout_s:g} s"
            ) from None
        finally:
            reads.remove(read)
        return read.values()

    def set_variables(self, node_id: int, start: int, values: tuple[int, ...]) -> None:
        """Write `values` at `start` of node `node_id` (split into frames of at most 256 words)."""
        for offset in range(0, len(values), MAX_REQUEST_WORDS):
            chunk = values[offset : offset + MAX_REQUEST_WORDS]
            self.send(command(MessageType.SET_VARIABLES, node_id, start + offset, *(v & 0xFFFF for v in chunk)))

    def emit(self, event_id: int, data: tuple[int, ...]) -> None:
        """Send user event `event_id` with `data` words from the host (source 0) to every node."""
        self.send(encode(UserMessage(HOST_SOURCE, event_id, data)))

    def set_bytecode(self, node_id: int, bytecode: tuple[int, ...], run: bool = True) -> None:
        """Load `bytecode` on node `node_id` (SetBytecode chunks of 256 words) and Run it (else Reset it)."""
        for offset in range(0, len(bytecode), MAX_REQUEST_WORDS):
            chunk = bytecode[offset : offset + MAX_REQUEST_WORDS]
            self.send(command(MessageType.SET_BYTECODE, node_id, offset, *(w & 0xFFFF for w in chunk)))
        self.send(command(MessageType.RUN if run else MessageType.RESET, node_id))

    def control(self, node_id: int, message_type: MessageType) -> None:
        """Send a VM command (Run, Stop, Pause, Step, Reset) to node `node_id`."""
        self.send(command(message_type, node_id))

    async def drain(self) -> None:
        """Wait until the link has taken the queued frames."""
        await self._writer.drain()

    async def close(self) -> None:
        """Close the link."""
        self._writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await self._writer.wait_closed()
