"""TDM message types and wire codes: what a client sends (decoded) and what the server sends (encoded).

Numbers are the union tags of `AnyMessage` (1-based) and the enums of Mobsya's `thymio.fbs`.
Variable and event values are lists of ints (the TDM sends them as untyped flexbuffer vectors).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, IntFlag


class MessageType(IntEnum):
    """Union tags of `AnyMessage`."""

    CONNECTION_HANDSHAKE = 1
    DEVICE_MANAGER_SHUTDOWN_REQUEST = 2
    REQUEST_LIST_OF_NODES = 3
    REQUEST_NODE_ASEBA_VM_DESCRIPTION = 4
    LOCK_NODE = 5
    UNLOCK_NODE = 6
    RENAME_NODE = 7
    COMPILE_AND_LOAD_CODE_ON_VM = 8
    NODES_CHANGED = 9
    NODE_ASEBA_VM_DESCRIPTION = 10
    REQUEST_COMPLETED = 11
    ERROR = 12
    COMPILATION_RESULT_FAILURE = 13
    COMPILATION_RESULT_SUCCESS = 14
    WATCH_NODE = 15
    VARIABLES_CHANGED = 16
    SET_VARIABLES = 17
    EVENTS_DESCRIPTIONS_CHANGED = 18
    REGISTER_EVENTS = 19
    SEND_EVENTS = 20
    EVENTS_EMITTED = 21
    SET_BREAKPOINTS = 22
    SET_BREAKPOINTS_RESPONSE = 23
    SET_VM_EXECUTION_STATE = 24
    VM_EXECUTION_STATE_CHANGED = 25
    SCRATCHPAD_UPDATE = 26
    FIRMWARE_UPGRADE_REQUEST = 27
    FIRMWARE_UPGRADE_STATUS = 28
    PING = 29
    ENABLE_THYMIO2_PAIRING_MODE = 30
    THYMIO2_WIRELESS_DONGLES_CHANGED = 31
    THYMIO2_WIRELESS_DONGLE_PAIRING_REQUEST = 32
    THYMIO2_WIRELESS_DONGLE_PAIRING_RESPONSE = 33
    COMPILE_AND_SAVE = 34
    SAVE_BYTECODE = 35


class NodeStatus(IntEnum):
    """A node's status as one client sees it (`ready`: locked by that client, `busy`: by another)."""

    UNKNOWN = 0
    CONNECTED = 1
    AVAILABLE = 2
    BUSY = 3
    READY = 4
    DISCONNECTED = 5


class NodeType(IntEnum):
    """The kind of node."""

    THYMIO2 = 0
    THYMIO2_WIRELESS = 1
    SIMULATED_THYMIO2 = 2
    DUMMY_NODE = 3
    UNKNOWN_TYPE = 4


class ErrorType(IntEnum):
    """Error codes of the `Error` reply."""

    NO_ERROR = 0
    UNKNOWN_ERROR = 1
    UNKNOWN_NODE = 2
    NODE_BUSY = 3
    UNSUPPORTED_VARIABLE_TYPE = 4


class ProgrammingLanguage(IntEnum):
    """Languages of `CompileAndLoadCodeOnVM`."""

    ASEBA = 1
    AESL = 2


class CompilationOptions(IntFlag):
    """Options of `CompileAndLoadCodeOnVM`."""

    NO_OPTION = 1
    LOAD_ON_TARGET = 2
    FETCH_BYTECODE = 4


class WatchableInfo(IntFlag):
    """What a `WatchNode` asks to be told about."""

    VARIABLES = 0x01
    EVENTS = 0x02
    VM_EXECUTION_STATE = 0x04
    SHARED_EVENTS_DESCRIPTION = 0x08
    SHARED_VARIABLES = 0x10
    SCRATCHPADS = 0x20


class VMExecutionStateCommand(IntEnum):
    """Commands of `SetVMExecutionState`."""

    STOP = 0
    RUN = 1
    STEP = 2
    STEP_TO_NEXT_LINE = 3
    PAUSE = 4
    RESET = 5
    REBOOT = 6
    SUSPEND = 7
    WRITE_PROGRAM_TO_DEVICE_MEMORY = 8


class VMExecutionState(IntEnum):
    """States of `VMExecutionStateChanged`."""

    STOPPED = 0
    RUNNING = 1
    PAUSED = 2


# -- client to server -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Handshake:
    """`ConnectionHandshake` from the client; `password` is empty when not given."""

    min_protocol_version: int
    protocol_version: int
    max_message_size: int
    password: str


@dataclass(frozen=True, slots=True)
class NodeRequest:
    """A request naming one node or group: LockNode, UnlockNode, RequestNodeAsebaVMDescription."""

    type: MessageType
    request_id: int
    node_id: bytes


@dataclass(frozen=True, slots=True)
class RequestListOfNodes:
    """Ask for every node (answered with NodesChanged)."""


@dataclass(frozen=True, slots=True)
class CompileAndLoad:
    """`CompileAndLoadCodeOnVM`: compile `program` in `language`; load it when `options` say so."""

    request_id: int
    node_id: bytes
    language: int
    program: str
    options: int


@dataclass(frozen=True, slots=True)
class WatchNode:
    """`WatchNode`: the full new set of `WatchableInfo` flags."""

    request_id: int
    node_id: bytes
    flags: int


@dataclass(frozen=True, slots=True)
class NamedValues:
    """SetVariables or SendEvents: (name, values) pairs for one node or group."""

    type: MessageType
    request_id: int
    node_id: bytes
    values: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class EventDefinition:
    """One global event of `RegisterEvents`: its name and size in words."""

    name: str
    size: int


@dataclass(frozen=True, slots=True)
class RegisterEvents:
    """The global events a program on the node or group may use."""

    request_id: int
    node_id: bytes
    events: tuple[EventDefinition, ...]


@dataclass(frozen=True, slots=True)
class SetVMExecutionState:
    """Run, stop, pause, step or reset the node's VM."""

    request_id: int
    node_id: bytes
    command: int


@dataclass(frozen=True, slots=True)
class ScratchpadUpdate:
    """`ScratchpadUpdate`: the code text an app shows for a node (VPL3 sends it between compile and run).

    `scratchpad_id` names the scratchpad (thymio-api uses the node id); `deleted` removes it.
    """

    request_id: int
    scratchpad_id: bytes
    group_id: bytes
    node_id: bytes
    language: int
    text: str
    name: str
    deleted: bool


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A known message type this server does not serve; `request_id` is 0 when it has none."""

    type: int
    request_id: int


Request = (
    Handshake
    | NodeRequest
    | RequestListOfNodes
    | CompileAndLoad
    | WatchNode
    | NamedValues
    | RegisterEvents
    | SetVMExecutionState
    | ScratchpadUpdate
    | Unsupported
)


# -- server to client -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node of `NodesChanged`."""

    node_id: bytes
    group_id: bytes
    status: NodeStatus
    type: NodeType
    name: str
    capabilities: int = 0
    fw_version: str = ""


@dataclass(frozen=True, slots=True)
class VMVariable:
    """A named variable of the VM description (`size` in words)."""

    index: int
    name: str
    size: int


@dataclass(frozen=True, slots=True)
class VMEvent:
    """A local event of the VM description."""

    index: int
    name: str
    description: str


@dataclass(frozen=True, slots=True)
class VMFunction:
    """A native function of the VM description; `parameters` are (name, size)."""

    index: int
    name: str
    description: str
    parameters: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class VMDescription:
    """`NodeAsebaVMDescription` (sizes in 16-bit words)."""

    request_id: int
    node_id: bytes
    bytecode_size: int
    data_size: int
    stack_size: int
    variables: tuple[VMVariable, ...]
    events: tuple[VMEvent, ...]
    functions: tuple[VMFunction, ...]
