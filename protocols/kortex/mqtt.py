"""Kortex 3 (Link 6) over MQTT: which topic a Frame travels on, and the checks on what arrives (sans-I/O).

Kinova's Link 6 clients put every non-cyclic RPC on the arm's MQTT broker (TCP 1883). Each MQTT
payload is one serialized `Kinova.Api.Frame` as on TCP and UDP, without magic or length prefix (MQTT
frames it). What the vendor's headers show (docs/kortex3-mqtt.md): the topic is generated from
the frame header; the topic words `dev`, `req`, `res`, `notif`, `ping` and `pong` are reserved;
notifications travel on ``notif/<serviceId>/<functionId>``; pongs on ``pong/...``; a reply goes to
the response topic that came with its request; raw session topics are ``sessions/killed`` and
``sessions/status``. The library that builds the exact strings is not public, so the rest of this
table is our reading of those facts, to be checked on a real arm [L]:

==============  ==============================================  =====================================
frame           topic                                           notes
==============  ==============================================  =====================================
REQUEST         ``req/<service>/<function>``                    device id 0 (the base)
REQUEST         ``dev/<device>/req/<service>/<function>``       routed to a sub-device
RESPONSE        the request's MQTT 5 Response Topic,            ours: ``res/<client id>``
                ``res/<client id>``
NOTIFICATION    ``notif/<service>/<function>``                  function: the subscribing RPC's
PING / PONG     ``ping/<session>`` / ``pong/<session>``
RAW             its own topic (``sessions/killed`` ...)         payload `PayloadFrameTypeRaw`
==============  ==============================================  =====================================

Numbers are decimal without leading zeros. `decode_message` refuses a payload that is not a Frame,
a topic outside the table, and a Frame whose type or ids disagree with its topic, each with a
`ProtocolError` naming the rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from google.protobuf.message import DecodeError

from protocols.errors import ProtocolError
from protocols.kortex.frame import Frame, decode_frame, encode_frame
from protocols.kortex.generated import Frame_pb2
from protocols.kortex.header import FrameType, Header
from protocols.kortex.services import Function

#: The arm's MQTT broker port (Kinova's `utilities.py` MQTT_PORT, the ros2_link6 xacro `port`).
MQTT_PORT = 1883
#: Topic words the vendor's transport refuses for custom topics (`m_prohibitedNames`).
RESERVED_WORDS = frozenset({"dev", "req", "res", "notif", "ping", "pong"})
#: Raw session topics (`MQTTConstants.h`).
SESSION_KILLED_TOPIC = "sessions/killed"
SESSION_STATUS_TOPIC = "sessions/status"
#: Requests that open a notification subscription: a client subscribes to their `notif` topic
#: (the vendor's `KortexApiProtocol` sniffs them to do so; ours subscribes when it connects).
SUBSCRIBING_FUNCTIONS = frozenset({Function.BASE_ARM_STATE_TOPIC})
#: Client ids: used inside the response topic, so no topic separators or wildcards.
MAX_CLIENT_ID_LENGTH = 64
_CLIENT_ID = re.compile(r"[A-Za-z0-9_.:-]+")
_NUMBER = re.compile(r"0|[1-9][0-9]{0,9}")

Family = Literal["req", "res", "notif", "ping", "pong", "raw"]


@dataclass(frozen=True, slots=True)
class Topic:
    """A parsed Kortex topic: its family and the ids written in it (0 / "" where the family has none)."""

    family: Family
    service_id: int = 0
    function_id: int = 0
    device_id: int = 0
    session_id: int = 0
    client_id: str = ""
    raw_topic: str = ""


def check_client_id(client_id: str) -> str:
    """`client_id` if it can stand in a response topic, else `ValueError` saying why."""
    if not client_id:
        raise ValueError("the MQTT client id is empty")
    if len(client_id) > MAX_CLIENT_ID_LENGTH:
        raise ValueError(f"the MQTT client id has {len(client_id)} characters, more than {MAX_CLIENT_ID_LENGTH}")
    if not _CLIENT_ID.fullmatch(client_id):
        raise ValueError(f"the MQTT client id {client_id!r} may hold only letters, digits and _ . : -")
    return client_id


def request_topic(service_id: int, function_id: int, device_id: int = 0) -> str:
    """Where a request to (`service_id`, `function_id`) is published; `device_id` routes it to a sub-device."""
    tail = f"req/{service_id}/{function_id}"
    return f"dev/{device_id}/{tail}" if device_id else tail


def response_topic(client_id: str) -> str:
    """The response topic a client names in its requests (MQTT 5 Response Topic)."""
    return f"res/{check_client_id(client_id)}"


def notification_topic(service_id: int, function_id: int) -> str:
    """Where the notifications of a subscribing RPC (service, function) are published."""
    return f"notif/{service_id}/{function_id}"


def ping_topic(session_id: int) -> str:
    """Where the arm pings session `session_id`."""
    return f"ping/{session_id}"


def pong_topic(session_id: int) -> str:
    """Where session `session_id` answers a ping."""
    return f"pong/{session_id}"


def topic_for(header: Header, reply_to: str | None = None) -> str:
    """The topic a frame with `header` is published on; a RESPONSE goes to `reply_to`."""
    frame_type = header.frame_type
    if frame_type == FrameType.REQUEST:
        return request_topic(header.service_id, header.function_id, header.device_id)
    if frame_type == FrameType.RESPONSE:
        if not reply_to:
            raise ProtocolError("a RESPONSE frame needs the response topic of its request")
        return reply_to
    if frame_type == FrameType.NOTIFICATION:
        return notification_topic(header.service_id, header.function_id)
    if frame_type == FrameType.PING:
        return ping_topic(header.session_id)
    if frame_type == FrameType.PONG:
        return pong_topic(header.session_id)
    raise ProtocolError(f"frame type {frame_type} has no topic of its own (RAW frames name theirs)")


def _number(text: str, what: str, bits: int, topic: str) -> int:
    if not _NUMBER.fullmatch(text):
        raise ProtocolError(f"topic {topic!r}: {what} {text!r} is not a decimal number")
    value = int(text)
    if value >= 1 << bits:
        raise ProtocolError(f"topic {topic!r}: {what} {value} does not fit {bits} bits")
    return value


def parse_topic(topic: str) -> Topic:
    """The family and ids of a Kortex topic; `ProtocolError` for any other topic."""
    if topic in (SESSION_KILLED_TOPIC, SESSION_STATUS_TOPIC):
        return Topic("raw", raw_topic=topic)
    parts = topic.split("/")
    device_id = 0
    if parts[0] == "dev":
        if len(parts) != 5 or parts[2] != "req":
            raise ProtocolError(f"topic {topic!r}: expected dev/<device>/req/<service>/<function>")
        device_id = _number(parts[1], "device id", 8, topic)
        parts = parts[2:]
    family = parts[0]
    if family in ("req", "notif"):
        if len(parts) != 3:
            raise ProtocolError(f"topic {topic!r}: expected {family}/<service>/<function>")
        service_id = _number(parts[1], "service id", 12, topic)
        function_id = _number(parts[2], "function id", 16, topic)
        return Topic(family, service_id, function_id, device_id)  # type: ignore[arg-type]
    if family == "res":
        if len(parts) != 2:
            raise ProtocolError(f"topic {topic!r}: expected res/<client id>")
        try:
            client_id = check_client_id(parts[1])
        except ValueError as error:
            raise ProtocolError(f"topic {topic!r}: {error}") from None
        return Topic("res", client_id=client_id)
    if family in ("ping", "pong"):
        if len(parts) != 2:
            raise ProtocolError(f"topic {topic!r}: expected {family}/<session>")
        return Topic(family, session_id=_number(parts[1], "session id", 16, topic))  # type: ignore[arg-type]
    raise ProtocolError(f"topic {topic!r} is not a Kortex topic (req, dev, res, notif, ping, pong, sessions/...)")


_FRAME_TYPES = frozenset(frame_type.value for frame_type in FrameType)
_FAMILY_TYPES: dict[Family, FrameType] = {
    "req": FrameType.REQUEST,
    "res": FrameType.RESPONSE,
    "notif": FrameType.NOTIFICATION,
    "ping": FrameType.PING,
    "pong": FrameType.PONG,
    "raw": FrameType.RAW,
}


def decode_message(topic: str, payload: bytes) -> tuple[Topic, Frame]:
    """Parse one MQTT message: its topic and the Frame it carries, which must agree with each other.

    `ProtocolError` when the topic is not a Kortex one, the payload is not a Frame, the frame type
    is not the topic's (a request on `res/...`), or its ids are not the ones in the topic.
    """
    parsed = parse_topic(topic)
    frame = decode_frame(payload)
    header = frame.header
    expected = _FAMILY_TYPES[parsed.family]
    if header.frame_type != expected:
        name = FrameType(header.frame_type).name if header.frame_type in _FRAME_TYPES else "undefined"
        got = f"frame type {header.frame_type} ({name})"
        raise ProtocolError(f"topic {topic!r} carries {expected.name} frames, got {got}")
    if parsed.family in ("req", "notif") and (header.service_id, header.function_id) != (
        parsed.service_id,
        parsed.function_id,
    ):
        raise ProtocolError(
            f"topic {topic!r} names service {parsed.service_id} function {parsed.function_id}, "
            f"the frame's header service {header.service_id} function {header.function_id}"
        )
    if parsed.family == "req" and header.device_id != parsed.device_id:
        raise ProtocolError(f"topic {topic!r} names device {parsed.device_id}, the frame's header {header.device_id}")
    if parsed.family in ("ping", "pong") and header.session_id != parsed.session_id:
        raise ProtocolError(
            f"topic {topic!r} names session {parsed.session_id}, the frame's header {header.session_id}"
        )
    if parsed.family == "raw":
        raw_topic, _ = decode_raw(frame)
        if raw_topic != topic:
            raise ProtocolError(f"topic {topic!r} carries a RAW frame naming topic {raw_topic!r}")
    return parsed, frame


def encode_raw(topic: str, payload: bytes, session_id: int = 0) -> bytes:
    """A RAW frame (type 2) carrying `payload` for `topic` (`PayloadFrameTypeRaw`)."""
    raw = Frame_pb2.PayloadFrameTypeRaw(topic=topic, payload=payload)
    return encode_frame(Header(frame_type=FrameType.RAW, session_id=session_id), raw.SerializeToString())


def decode_raw(frame: Frame) -> tuple[str, bytes]:
    """(topic, payload) of a RAW frame; `ProtocolError` if its payload is not a `PayloadFrameTypeRaw`."""
    if frame.header.frame_type != FrameType.RAW:
        raise ProtocolError(f"frame type {frame.header.frame_type} is not RAW (2)")
    raw = Frame_pb2.PayloadFrameTypeRaw()
    try:
        raw.ParseFromString(frame.payload)
    except DecodeError as error:
        raise ProtocolError(f"RAW frame payload is not a PayloadFrameTypeRaw: {error}") from None
    return raw.topic, raw.payload


def session_killed_will(client_id: str, session_id: int) -> bytes:
    """The last will a client leaves with the broker: a RAW frame on ``sessions/killed`` naming it.

    The vendor's router builds a RAW frame "to flag the session has closed unexpectedly" as its MQTT
    last will (`RouterMQTT::generateLWTFrame`); its topic and payload are not public. Ours: the
    `sessions/killed` raw topic, the client id as payload, the session id in the header [L].
    """
    return encode_raw(SESSION_KILLED_TOPIC, check_client_id(client_id).encode(), session_id)
