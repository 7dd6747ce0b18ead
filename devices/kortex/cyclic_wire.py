"""The messages between the gateway and its Kortex cyclic process, one per SOCK_SEQPACKET packet.

Each packet is a one-byte tag and a body: a feedback is the reply's bare protobuf payload (the hot
path, 1,000 a second: no encoding at all), everything else a msgpack array. Both ends are ours and
start together, so there is no versioning; a packet that does not decode is a bug, reported as
`ValueError` naming the tag.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import msgpack

# -- gateway -> cyclic process ----------------------------------------------------------------------
#: The `ChildConfig`, first and once.
CONFIG = b"C"
#: A `Plan`: what every cycle sends from now on (the child keeps the last one it read).
PLAN = b"P"
#: The gateway's event loop is alive (sent every `HEARTBEAT_S`).
BEAT = b"B"
#: Send the safe command and CloseSession, then exit.
STOP = b"S"

# -- cyclic process -> gateway ----------------------------------------------------------------------
#: A BaseCyclic reply's protobuf payload.
FEEDBACK = b"F"
#: [session id, scheduling in words]: the UDP session exists, the loop cycles.
SESSION = b"O"
#: [plan version, frame id] of the first cycle that carried a plan.
SENT = b"N"
#: [plan version, error text or None]: the one Refresh of a `once` plan was answered (or not).
ANSWERED = b"A"
#: A `ChildStats`.
STATS = b"T"
#: [level, text]: a line for the gateway's log.
LOG = b"L"
#: [reason]: the link failed; the process exits.
FAILED = b"X"
#: [why it stopped]: CloseSession was answered (or timed out); the process exits.
CLOSED = b"Z"

#: How often the gateway tells the cyclic process that its event loop runs (s).
HEARTBEAT_S = 0.1


@dataclass(frozen=True, slots=True)
class ChildConfig:
    """What the cyclic process needs to open the UDP session and cycle (times in s unless named)."""

    name: str
    host: str
    port: int
    username: str
    password: str
    session_inactivity_timeout_ms: int
    connection_inactivity_timeout_ms: int
    rpc_timeout_s: float
    rate_hz: float
    reply_timeout_s: float
    publish_interval_s: float
    link_timeout_s: float
    stall_s: float
    priority: int
    cpus: tuple[int, ...]
    spin_ns: int


@dataclass(frozen=True, slots=True)
class Plan:
    """What every cycle sends until the next plan.

    `low_level`: BaseCyclic.Refresh with `command` (a serialized BaseCyclicKortex3 Command, stamped
    with each cycle's frame id), else RefreshFeedback. `once`: one Refresh with `command`, answered
    with ANSWERED, then RefreshFeedback (the last Refresh of low-level servoing).
    """

    version: int
    low_level: bool = False
    once: bool = False
    command: bytes = b""


@dataclass(slots=True)
class ChildStats:
    """The loop's counters since it started (see `KortexCyclicStats`) and the send periods since the last."""

    cycles: int = 0
    replies: int = 0
    dropped: int = 0
    late: int = 0
    errors: int = 0
    skipped: int = 0
    #: Cycles sent with the wrist's outputs at 0 because the gateway had stalled.
    stalled_cycles: int = 0
    #: Feedback replaced by a newer one before the gateway's full socket queue took it.
    feedback_dropped: int = 0
    #: Requests sent and neither answered nor dropped yet.
    inflight: int = 0
    #: Send periods (ns) since the previous stats, as native int64s.
    periods: bytes = b""


def pack(tag: bytes, *fields: Any) -> bytes:
    """A control packet: `tag` and `fields` as a msgpack array."""
    return tag + msgpack.packb(list(fields), use_bin_type=True)


def unpack(packet: bytes) -> tuple[bytes, list[Any]]:
    """(tag, fields) of a control packet; `ValueError` if it is not one."""
    tag = packet[:1]
    try:
        fields = msgpack.unpackb(packet[1:], raw=False, use_list=True)
    except (ValueError, msgpack.UnpackException) as error:
        raise ValueError(f"cyclic process packet {tag!r}: {error}") from None
    if not isinstance(fields, list):
        raise ValueError(f"cyclic process packet {tag!r}: not an array")
    return tag, fields


def pack_config(config: ChildConfig) -> bytes:
    """The CONFIG packet."""
    return pack(CONFIG, asdict(config))


def unpack_config(fields: list[Any]) -> ChildConfig:
    """The `ChildConfig` of a CONFIG packet's fields."""
    values = dict(fields[0])
    values["cpus"] = tuple(values["cpus"])
    return ChildConfig(**values)


def pack_plan(plan: Plan) -> bytes:
    """The PLAN packet."""
    return pack(PLAN, plan.version, plan.low_level, plan.once, plan.command)


def unpack_plan(fields: list[Any]) -> Plan:
    """The `Plan` of a PLAN packet's fields."""
    version, low_level, once, command = fields
    return Plan(int(version), bool(low_level), bool(once), bytes(command))


def pack_stats(stats: ChildStats) -> bytes:
    """The STATS packet."""
    return pack(STATS, asdict(stats))


def unpack_stats(fields: list[Any]) -> ChildStats:
    """The `ChildStats` of a STATS packet's fields."""
    return ChildStats(**fields[0])
