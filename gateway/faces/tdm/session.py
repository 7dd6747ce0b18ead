"""One TDM client: its requests (decoded by `protocols.tdm`) mapped onto the client core.

A TDM node is an `aseba` device (the node its commands address), one per robot: devices that reach
the same robot (the same UUID, `DeviceHandle.identity`) are one node (`nodes.one_per_robot`). What
each client was last told of the nodes is kept, so any device event sends what changed since
(`_nodes_changed`): a duplicate hidden, or shown when the one shown before left. The TDM's lock is
the gateway's exclusive control lock (`Client.lock`), so a node locked here is locked for every
face, and a client that leaves releases it. Programs are compiled by the gateway's own Aseba compiler against
the node's live description and the events the client registered (`hwgateway/AsebaCompile`);
watched variables are read with `hwgateway/AsebaVariables` once every `VARIABLES_PERIOD_S` for every
session watching the node (`gateway.faces.tdm.variables`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Protocol

from gateway.bus import DeviceEvent, Outgoing, Sample
from gateway.core.admission import REFUSALS_LOG
from gateway.core.client import Client, Hub
from gateway.core.session_state import SessionState
from gateway.errors import (
    DeviceUnavailable,
    ErrorCode,
    GatewayError,
    Locked,
    Unauthorized,
    UnknownDevice,
)
from gateway.faces.outbox import CLOSE_TIMEOUT_S, Outbox
from gateway.faces.outbox import Transport as FrameTransport
from gateway.faces.tdm import nodes
from gateway.faces.tdm.event_names import event_name
from gateway.faces.tdm.shared import Group, Scratchpad, TdmShared
from gateway.faces.tdm.variables import Variables
from gateway.servers.socket_transport import CLOSE_DRAIN_S
from gateway.throttled_logs import CONNECTION_LINES
from protocols.errors import ProtocolError
from protocols.tdm import codec
from protocols.tdm.framing import MAX_MESSAGE_BYTES
from protocols.tdm.messages import (
    CompilationOptions,
    CompileAndLoad,
    ErrorType,
    Handshake,
    MessageType,
    NamedValues,
    NodeInfo,
    NodeRequest,
    NodeStatus,
    NodeType,
    ProgrammingLanguage,
    RegisterEvents,
    Request,
    RequestListOfNodes,
    ScratchpadUpdate,
    SetVMExecutionState,
    Unsupported,
    VMDescription,
    VMEvent,
    VMExecutionState,
    VMExecutionStateCommand,
    VMFunction,
    VMVariable,
    WatchableInfo,
    WatchNode,
)

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
#: Seconds a reader waits for a close begun elsewhere: the outbox's flush, then the socket's drain.
FINISH_WAIT_S = CLOSE_TIMEOUT_S + CLOSE_DRAIN_S + 0.5
#: Seconds between two Pings (the real TDM's period; tdmclient's reader needs them to stop).
PING_PERIOD_S = 2.5
_VM_COMMANDS = {
    VMExecutionStateCommand.RUN: ("run", VMExecutionState.RUNNING),
    VMExecutionStateCommand.STOP: ("stop", VMExecutionState.STOPPED),
    VMExecutionStateCommand.PAUSE: ("pause", VMExecutionState.PAUSED),
    VMExecutionStateCommand.STEP: ("step", VMExecutionState.PAUSED),
    VMExecutionStateCommand.RESET: ("reset", VMExecutionState.STOPPED),
}


class Transport(FrameTransport, Protocol):
    """A TDM connection: `frame` wraps one flatbuffer for the wire (`framing` names how, for caching)."""

    framing: str

    def frame(self, message: bytes) -> bytes:
        """The bytes that carry `message`."""


class TdmError(Exception):
    """A request to answer with the TDM's `Error` and `code`."""

    def __init__(self, code: ErrorType, message: str) -> None:
        super().__init__(message)
        self.code = code


def _error_code(error: GatewayError) -> ErrorType:
    if isinstance(error, Locked):
        return ErrorType.NODE_BUSY
    if isinstance(error, UnknownDevice | DeviceUnavailable):
        return ErrorType.UNKNOWN_NODE
    return ErrorType.UNKNOWN_ERROR


class TdmSession:
    """One connection speaking the TDM protocol (TCP or WebSocket: the transport frames it)."""

    def __init__(
        self,
        hub: Hub,
        transport: Transport,
        peer: str,
        ws_port: int,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        shared: TdmShared | None = None,
    ) -> None:
        """`sleep(seconds)` paces the pings (tests pass one they release by hand).

        `shared` holds the face's groups and scratchpads (one for all its sessions).
        """
        self.hub = hub
        self.shared = shared if shared is not None else TdmShared()
        self._sleep = sleep
        self.transport = transport
        self.client = Client(hub, peer, "tdm")
        self.id = self.client.id
        self._ws_port = ws_port
        self._outbox = Outbox(self.id, self.client.subscriber, transport, self._render)
        self.state = SessionState.OPENING
        self._tasks: set[asyncio.Task[None]] = set()
        self._watch: dict[str, int] = {}
        self._group_watch: dict[bytes, int] = {}
        #: What this client was sent of each node whose variables it watches (name -> words).
        self._known: dict[str, dict[str, tuple[int, ...]]] = {}
        self._vm_state: dict[str, VMExecutionState] = {}
        #: The nodes this client was last told are there (device -> what it was told).
        self._sent: dict[str, NodeInfo] = {}
        self._finished = asyncio.Event()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Register with the hub and start the writer; nothing is sent before the client's handshake."""
        self.hub.sessions.add(self)
        self._outbox.start()
        CONNECTION_LINES.log(log, "tdm client %s connected from %s", self.id, self.client.peer)

    @property
    def admitted(self) -> bool:
        """True once the client's handshake (with the token as its password, when tokens are set) passed."""
        return self.state is SessionState.OPEN

    @property
    def closing(self) -> bool:
        """True once the session is closing: what the client sends is no longer handled."""
        return self._outbox.closing or self.client.admission.refused_out

    async def wait_finished(self) -> None:
        """Return once the session is over, or after the outbox's close timeout and the socket's drain."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FINISH_WAIT_S):
                await self._finished.wait()

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Send what is queued, then close (the TDM protocol has no goodbye message)."""
        if self._outbox.closing:
            return
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.CLOSING
        CONNECTION_LINES.log(log, "tdm client %s: closing: %s", self.id, reason)
        await self._outbox.flush_and_close(code, reason, None)
        self.finish()

    def abort(self) -> None:
        """Drop the connection at once and forget the client."""
        self._outbox.abort()
        self.finish()

    def finish(self) -> None:
        """Forget the client: stop its tasks, drop its subscriptions, release its locks and leases."""
        self._finished.set()
        if self.state is SessionState.CLOSED:
            return
        self.state = SessionState.CLOSED
        self.hub.sessions.discard(self)
        self.shared.watchers.discard(self)
        self.shared.polls.unwatch_all(self)
        for task in self._tasks:
            task.cancel()
        self._outbox.stop()
        self.client.leave()
        CONNECTION_LINES.log(log, "tdm client %s disconnected", self.id)

    def _spawn(self, coroutine: Any, name: str) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coroutine, name=f"tdm:{self.id}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _ping(self) -> None:
        ping = codec.ping()
        while True:
            await self._sleep(PING_PERIOD_S)
            self._push(ping)

    # -- input -------------------------------------------------------------------------------

    async def receive(self, data: bytes) -> None:
        """Handle one message (one flatbuffer); bad input gets an `Error` reply, the session goes on.

        Each refusal spends the client's refusal budget first (`Admission`): past it, the client is
        closed; refusals are logged at most once per interval (`REFUSALS_LOG`).
        """
        if self.closing:
            return
        await self._outbox.room()
        try:
            request = codec.decode(data)
        except ProtocolError as error:
            if self.state is SessionState.OPENING:
                await self.close(ErrorCode.BAD_REQUEST, f"the first message must be a handshake ({error})")
                return
            await self._refused(0, ErrorType.UNKNOWN_ERROR, f"bad message: {error}")
            return
        if self.state is SessionState.OPENING:
            await self._handshake(request)
            return
        request_id = getattr(request, "request_id", 0)
        try:
            self.client.admit()
            await self._dispatch(request)
        except TdmError as error:
            await self._refused(request_id, error.code, str(error))
        except GatewayError as error:
            await self._refused(request_id, _error_code(error), error.message)
        except Exception:
            log.exception("tdm client %s: request %d failed", self.id, request_id)
            self._push(codec.error(request_id, ErrorType.UNKNOWN_ERROR))

    async def _refused(self, request_id: int, code: ErrorType, message: str) -> None:
        """Answer a refused request with `Error`, within the refusal budget (then close)."""
        REFUSALS_LOG.log("tdm client %s: request %d refused: %s", self.id, request_id, message[:200])
        await self.client.admission.refused(
            self.id, message, lambda: self._push(codec.error(request_id, code)), self.close
        )

    async def reject_oversize(self, size: int) -> None:
        """A frame longer than the TDM's limit: the stream cannot be resynchronised, so close."""
        await self.close(ErrorCode.TOO_LARGE, f"a TDM message of {size} bytes exceeds {MAX_MESSAGE_BYTES}")

    async def _handshake(self, request: Request) -> None:
        if not isinstance(request, Handshake):
            await self.close(ErrorCode.BAD_REQUEST, "the first message must be a ConnectionHandshake")
            return
        if request.min_protocol_version > PROTOCOL_VERSION:
            self._push(codec.handshake(0, MAX_MESSAGE_BYTES, self._local, self._ws_port))
            await self.close(ErrorCode.BAD_REQUEST, f"protocol {request.min_protocol_version} not supported")
            return
        if not self.client.authenticated:
            try:
                await self.client.authenticate(request.password)
            except Unauthorized:
                await self.close(ErrorCode.UNAUTHORIZED, "wrong or missing password (the gateway's token)")
                return
        self.state = SessionState.OPEN
        self._push(codec.handshake(PROTOCOL_VERSION, MAX_MESSAGE_BYTES, self._local, self._ws_port))
        # The node list follows the handshake at once, even empty (no robot connected yet): clients
        # wait for a first NodesChanged (thymio-api's connect, tdmclient's wait_for_node).
        self._push(codec.nodes_changed(self._nodes_changed()))
        devices = [h.id for h in self._visible_devices()]  # a hidden duplicate's events too: it may be shown later
        if devices:
            self.client.subscribe([f"{device}/node/*/events/*" for device in devices], None)
        self.client.join()  # every device's availability follows: NodesChanged for the TDM nodes
        self.shared.watchers.add(self)
        self._spawn(self._ping(), "ping")

    @property
    def _local(self) -> bool:
        return self.client.peer in ("127.0.0.1", "::1", "unix") or self.client.peer.startswith("127.")

    async def _dispatch(self, request: Request) -> None:
        if isinstance(request, Handshake):
            self._push(codec.handshake(PROTOCOL_VERSION, MAX_MESSAGE_BYTES, self._local, self._ws_port))
        elif isinstance(request, RequestListOfNodes):
            gone = [info for info in self._nodes_changed() if info.status is NodeStatus.DISCONNECTED]
            self._push(codec.nodes_changed([*gone, *self._sent.values()]))
        elif isinstance(request, NodeRequest):
            await self._node_request(request)
        elif isinstance(request, NamedValues):
            await self._named_values(request)
        elif isinstance(request, WatchNode):
            self._watch_node(request)
        elif isinstance(request, RegisterEvents):
            group = self._group_to_change(request.node_id)
            self._push(codec.request_completed(request.request_id))
            self.shared.set_events(group, request.events)
        elif isinstance(request, CompileAndLoad):
            await self._compile(request)
        elif isinstance(request, SetVMExecutionState):
            await self._vm_command(request)
        elif isinstance(request, ScratchpadUpdate):
            self._scratchpad(request)
        elif isinstance(request, Unsupported):
            raise TdmError(ErrorType.UNKNOWN_ERROR, f"message {MessageType(request.type).name} is not supported")

    # -- requests ----------------------------------------------------------------------------

    def _visible_devices(self) -> list[Any]:
        """The devices of node kinds this client sees (every one, or those its token's device patterns match)."""
        return [h for h in self.client.devices() if nodes.is_node(h.kind) and self.client.may_see(h.id)]

    def _hidden(self, device: str) -> bool:
        """True when `device` reaches a robot this client is shown through another device (a duplicate)."""
        handle = self.client.device(device)
        if handle is None or handle.identity is None:
            return False  # the common case: no folding to work out for each event and variable read
        return all(shown.id != device for shown in self._node_handles())

    def _node_handles(self) -> list[Any]:
        """The TDM nodes this client sees: its visible devices, one per robot."""
        return nodes.one_per_robot(self._visible_devices())

    def _device(self, node_id: bytes) -> str:
        """The connected device a node id names (a group id too, when the group has one node); `Error unknown_node`."""
        for handle in self._node_handles():
            if node_id == nodes.node_id(handle.id):
                if handle.status != "connected":
                    raise TdmError(ErrorType.UNKNOWN_NODE, f"node {handle.id} is {handle.status}")
                return str(handle.id)
        members = self._members(node_id)
        if len(members) == 1:
            return self._device(nodes.node_id(members[0]))
        raise TdmError(ErrorType.UNKNOWN_NODE, f"no node {node_id.hex()}")

    def _members(self, group_id: bytes) -> list[str]:
        """The devices of group `group_id` this client sees (none: no such group)."""
        return [str(h.id) for h in self._node_handles() if self.shared.group_id(h.id) == group_id]

    def _group_of(self, node_or_group: bytes) -> tuple[Group, list[str]]:
        """The group a node or group id names, and its devices this client sees; `Error unknown_node` when none."""
        members = self._members(node_or_group)
        if members:
            return self.shared.group(node_or_group), members
        for handle in self._node_handles():
            if node_or_group == nodes.node_id(handle.id):
                group_id = self.shared.group_id(handle.id)
                return self.shared.group(group_id), self._members(group_id)
        raise TdmError(ErrorType.UNKNOWN_NODE, f"no node or group {node_or_group.hex()}")

    def _group_to_change(self, node_or_group: bytes) -> Group:
        """The group a node or group id names, when this client holds the lock of one of its nodes (as the TDM asks)."""
        group, members = self._group_of(node_or_group)
        for device in members:
            handle = self.client.device(device)
            if handle is not None and handle.locked_by == self.client.id:
                return group
        raise TdmError(
            ErrorType.UNKNOWN_NODE, "lock a node of the group first: its events and shared variables need it"
        )

    def _locked_device(self, node_id: bytes) -> str:
        """Like `_device`, for requests that need this client's lock (as the real TDM does)."""
        device = self._device(node_id)
        handle = self.client.device(device)
        holder = handle.locked_by if handle is not None else None
        if holder != self.client.id:
            code = ErrorType.UNKNOWN_NODE if holder is None else ErrorType.NODE_BUSY
            raise TdmError(code, f"node {device} is not locked by this client (lock it first)")
        return device

    async def _command(self, device: str, type_name: str, data: dict[str, Any]) -> dict[str, Any]:
        return await self.client.command(device, type_name, data, None)

    async def _node_request(self, request: NodeRequest) -> None:
        device = self._device(request.node_id)
        if request.type is MessageType.LOCK_NODE:
            self.client.lock(device)
            self._push(codec.request_completed(request.request_id))
        elif request.type is MessageType.UNLOCK_NODE:
            # A teacher (admin token) takes a robot over: its UnlockNode ends a student's lock.
            credential = self.client.credential
            self.client.unlock(device, force=credential is not None and credential.admin)
            self._push(codec.request_completed(request.request_id))
        else:
            self._push(codec.vm_description(await self._description(device, request.request_id)))

    async def _description(self, device: str, request_id: int) -> VMDescription:
        data = await self.client.read(device, "hwgateway/AsebaVMDescription", {})
        return VMDescription(
            request_id=request_id,
            node_id=nodes.node_id(device),
            bytecode_size=data["bytecode_size"],
            data_size=data["variables_size"],
            stack_size=data["stack_size"],
            variables=tuple(VMVariable(i, v["name"], v["size"]) for i, v in enumerate(data["variables"])),
            events=tuple(VMEvent(i, e["name"], e["description"]) for i, e in enumerate(data["local_events"])),
            functions=tuple(
                VMFunction(i, f["name"], f["description"], tuple((p["name"], p["size"]) for p in f["parameters"]))
                for i, f in enumerate(data["natives"])
            ),
        )

    def _is_node(self, node_or_group: bytes) -> bool:
        return any(node_or_group == nodes.node_id(h.id) for h in self._node_handles())

    async def _named_values(self, request: NamedValues) -> None:
        if request.type is MessageType.SET_VARIABLES and not self._is_node(request.node_id):
            group = self._group_to_change(request.node_id)  # a group's shared variables
            self._push(codec.request_completed(request.request_id))
            self.shared.set_variables(group, dict(request.values))
            return
        if request.type is MessageType.SET_VARIABLES:
            device = self._locked_device(request.node_id)
            for name, words in request.values:
                await self._command(device, "asebaros_msgs/SetVariable", {"variable": name, "data": list(words)})
        else:
            for device in self._event_targets(request.node_id):
                for name, words in request.values:
                    await self._command(device, "hwgateway/AsebaEvent", {"name": name, "data": list(words)})
        self._push(codec.request_completed(request.request_id))

    def _event_targets(self, node_or_group: bytes) -> list[str]:
        """Where SendEvents goes: the node, or every node of the group that no other client has locked."""
        if self._is_node(node_or_group):
            return [self._device(node_or_group)]
        _, members = self._group_of(node_or_group)
        targets = []
        for device in members:
            handle = self.client.device(device)
            if handle is not None and handle.status == "connected" and handle.locked_by in (None, self.client.id):
                targets.append(device)
        if not targets:
            raise TdmError(ErrorType.NODE_BUSY, "every node of the group is locked by another client or gone")
        return targets

    def _watch_node(self, request: WatchNode) -> None:
        if not self._is_node(request.node_id):
            self._watch_group(request)
            return
        device = self._device(request.node_id)
        before = self._watch.get(device, 0)
        self._watch[device] = request.flags
        self._push(codec.request_completed(request.request_id))
        self._send_shared(self.shared.group(self.shared.group_id(device)), request.flags & ~before, device)
        if request.flags & WatchableInfo.VARIABLES:
            if device not in self._known:
                self._known[device] = {}
                self.shared.polls.watch(device, self)
        elif self._known.pop(device, None) is not None:
            self.shared.polls.unwatch(device, self)
        if request.flags & WatchableInfo.VM_EXECUTION_STATE and not before & WatchableInfo.VM_EXECUTION_STATE:
            self._push_vm_state(device)

    async def read_variables(self, device: str) -> dict[str, Any]:
        """Read `device`'s variables through this client (`hwgateway/AsebaVariables`: under any lock)."""
        return await self.client.read(device, "hwgateway/AsebaVariables", {})

    def variables_read(self, device: str, variables: Variables) -> None:
        """Send what changed in `device`'s variables since this client was last sent them (all, the first time)."""
        known = self._known.get(device)
        if known is None or self.state is not SessionState.OPEN or not self.client.may_see(device):
            return
        if self._hidden(device):
            return
        changed = []
        for name, words in variables:
            if known.get(name) != words:
                known[name] = words
                changed.append((name, words))
        if changed:
            self._push(codec.variables_changed(nodes.node_id(device), changed, int(time.time() * 1000)))

    async def _compile(self, request: CompileAndLoad) -> None:
        device = self._locked_device(request.node_id)
        if request.language != ProgrammingLanguage.ASEBA:
            raise TdmError(ErrorType.UNKNOWN_ERROR, f"language {request.language} is not supported (only Aseba, 1)")
        load = bool(request.options & CompilationOptions.LOAD_ON_TARGET)
        group = self.shared.group(self.shared.group_id(device))  # the events registered on the node's group
        events = [{"name": e.name, "size": e.size} for e in group.events]
        result = await self._command(
            device, "hwgateway/AsebaCompile", {"source": request.program, "events": events, "load": load}
        )
        if not result["ok"]:
            self._push(
                codec.compilation_failure(request.request_id, result["message"], 0, result["line"], result["column"])
            )
            return
        self._push(
            codec.compilation_success(
                request.request_id,
                result["bytecode_size"],
                result["total_bytecode_size"],
                result["variables_size"],
                result["total_variables_size"],
            )
        )
        if load:
            self._set_vm_state(device, VMExecutionState.STOPPED)

    async def _vm_command(self, request: SetVMExecutionState) -> None:
        device = self._locked_device(request.node_id)
        try:
            command, state = _VM_COMMANDS[VMExecutionStateCommand(request.command)]
        except (KeyError, ValueError):
            raise TdmError(ErrorType.UNKNOWN_ERROR, f"VM command {request.command} is not supported") from None
        await self._command(device, "hwgateway/AsebaVMControl", {"command": command})
        self._push(codec.request_completed(request.request_id))
        self._set_vm_state(device, state)

    def _watch_group(self, request: WatchNode) -> None:
        group, _ = self._group_of(request.node_id)
        before = self._group_watch.get(group.id, 0)
        self._group_watch[group.id] = request.flags
        self._push(codec.request_completed(request.request_id))
        self._send_shared(group, request.flags & ~before, None)

    def _send_shared(self, group: Group, flags: int, device: str | None) -> None:
        """What a watch just asked for that the TDM sends at once: the group's events, variables, scratchpads."""
        if flags & WatchableInfo.SHARED_EVENTS_DESCRIPTION:
            self._push(codec.events_descriptions_changed(group.id, group.events))
        if flags & WatchableInfo.SHARED_VARIABLES and group.variables:
            self._push(codec.variables_changed(group.id, list(group.variables.items()), int(time.time() * 1000)))
        if flags & WatchableInfo.SCRATCHPADS:
            for scratchpad in list(self.shared.scratchpads.values()):
                if self._watches_scratchpad(scratchpad) and (
                    device is None or scratchpad.node_id == nodes.node_id(device)
                ):
                    self._push(codec.scratchpad_update(_scratchpad_message(scratchpad, False)))

    def _scratchpad(self, request: ScratchpadUpdate) -> None:
        device = self._device(request.node_id)
        credential = self.client.credential
        if credential is None or not credential.permits(device):
            raise TdmError(ErrorType.UNKNOWN_NODE, f"scratchpad of {device}: not allowed for this client's token")
        scratchpad = Scratchpad(
            request.scratchpad_id or request.node_id,
            request.node_id,
            self.shared.group_id(device),
            request.language,
            request.text,
            request.name,
        )
        try:
            self.shared.update_scratchpad(scratchpad, request.deleted)
        except ValueError as error:
            raise TdmError(ErrorType.UNKNOWN_ERROR, str(error)) from None
        self._push(codec.request_completed(request.request_id))

    # -- shared changes (TdmShared's watchers) ------------------------------------------------

    def _watches_group(self, group: Group, flag: WatchableInfo) -> bool:
        if self._group_watch.get(group.id, 0) & flag:
            return True
        return any(self._watch.get(device, 0) & flag for device in self._members(group.id))

    def _watches_scratchpad(self, scratchpad: Scratchpad) -> bool:
        if self._group_watch.get(scratchpad.group_id, 0) & WatchableInfo.SCRATCHPADS:
            return True
        device = next((h.id for h in self._node_handles() if nodes.node_id(h.id) == scratchpad.node_id), None)
        return device is not None and bool(self._watch.get(device, 0) & WatchableInfo.SCRATCHPADS)

    def group_events_changed(self, group: Group) -> None:
        """Send the group's new events to this client when it watches them."""
        if self.state is SessionState.OPEN and self._watches_group(group, WatchableInfo.SHARED_EVENTS_DESCRIPTION):
            self._push(codec.events_descriptions_changed(group.id, group.events))

    def shared_variables_changed(self, group: Group) -> None:
        """Send the group's shared variables to this client when it watches them."""
        if self.state is SessionState.OPEN and self._watches_group(group, WatchableInfo.SHARED_VARIABLES):
            self._push(codec.variables_changed(group.id, list(group.variables.items()), int(time.time() * 1000)))

    def scratchpad_changed(self, scratchpad: Scratchpad, deleted: bool) -> None:
        """Send a scratchpad's change to this client when it watches the node's (or group's) scratchpads."""
        if self.state is SessionState.OPEN and self._watches_scratchpad(scratchpad):
            self._push(codec.scratchpad_update(_scratchpad_message(scratchpad, deleted)))

    def _set_vm_state(self, device: str, state: VMExecutionState) -> None:
        self._vm_state[device] = state
        if self._watch.get(device, 0) & WatchableInfo.VM_EXECUTION_STATE:
            self._push_vm_state(device)

    def _push_vm_state(self, device: str) -> None:
        state = self._vm_state.get(device, VMExecutionState.RUNNING)
        self._push(codec.vm_state_changed(nodes.node_id(device), state))

    # -- output ------------------------------------------------------------------------------

    def _node_info(self, device: str, status: str, locked_by: str | None) -> NodeInfo | None:
        if status != "connected":
            return None
        if locked_by is None:
            shown = NodeStatus.AVAILABLE
        else:
            shown = NodeStatus.READY if locked_by == self.client.id else NodeStatus.BUSY
        return NodeInfo(nodes.node_id(device), self.shared.group_id(device), shown, NodeType.THYMIO2, device)

    def _render(self, item: Outgoing) -> bytes | None:
        if isinstance(item, DeviceEvent):
            return self._render_device(item)
        if isinstance(item, Sample) and "/events/" in item.topic:
            device = item.topic.split("/", 1)[0]
            if not self._watch.get(device, 0) & WatchableInfo.EVENTS or self._hidden(device):
                return None
            name = event_name(self.hub.bus, item.topic)  # escaped in the topic (gateway.topics.name_segment)
            words = tuple(item.message.data)
            return item.encoded(
                f"tdm:{self.transport.framing}:events",
                lambda: self._frame(
                    codec.events_emitted(nodes.node_id(device), [(name, words)], int(item.stamp * 1000))
                ),
            )
        return None

    def _render_device(self, event: DeviceEvent) -> bytes | None:
        if not nodes.is_node(event.kind):
            return None
        # The nodes as they are now, whatever event brought this: one device's change may show or hide
        # a duplicate, and events a slow client skipped (its mailbox keeps the newest) change nothing.
        changes = self._nodes_changed()
        return self._frame(codec.nodes_changed(changes)) if changes else None

    def _nodes_changed(self) -> list[NodeInfo]:
        """What changed in the nodes this client sees since it was last told (the gone first, DISCONNECTED)."""
        now: dict[str, NodeInfo] = {}
        for handle in self._node_handles():
            info = self._node_info(handle.id, handle.status, handle.locked_by)
            if info is not None:
                now[handle.id] = info
        gone = [replace(old, status=NodeStatus.DISCONNECTED) for device, old in self._sent.items() if device not in now]
        changed = [info for device, info in now.items() if self._sent.get(device) != info]
        self._sent = now
        return [*gone, *changed]

    def _frame(self, message: bytes) -> bytes:
        return self.transport.frame(message)

    def _push(self, message: bytes) -> None:
        self._outbox.push(self._frame(message))


def _scratchpad_message(scratchpad: Scratchpad, deleted: bool) -> ScratchpadUpdate:
    return ScratchpadUpdate(
        0, scratchpad.id, scratchpad.group_id, scratchpad.node_id, scratchpad.language, scratchpad.text,
        scratchpad.name, deleted,
    )  # fmt: skip
