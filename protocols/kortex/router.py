"""The per-link protocol state of a Kortex client: message ids, the session id, and what came in.

Sans-I/O like h11: `request` returns the bytes to send (a bare Frame; TCP adds `framing.encode_tcp`)
and `receive` classifies one incoming Frame into an event. Futures, timeouts and sockets live in
devices/kortex. One `Router` per transport: TCP and UDP each learn their own session id
(spec kortex.md §2.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.kortex.errors import KortexError
from protocols.kortex.frame import Frame, decode_error, decode_frame, encode_frame, encode_pong
from protocols.kortex.header import FrameType, Header


@dataclass(frozen=True, slots=True)
class Response:
    """The successful answer to request `message_id`."""

    message_id: int
    frame: Frame


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """The robot refused request `message_id`."""

    message_id: int
    error: KortexError
    frame: Frame


@dataclass(frozen=True, slots=True)
class Notification:
    """A published event of subscription `handle` of service `service_id`."""

    service_id: int
    handle: int
    frame: Frame


@dataclass(frozen=True, slots=True)
class Ping:
    """The robot asks for a PONG; `reply` holds it, ready to send."""

    reply: bytes
    frame: Frame


@dataclass(frozen=True, slots=True)
class Unexpected:
    """A frame a client has no use for (a request, a raw frame, a pong, an unknown type)."""

    frame: Frame


Event = Response | ErrorResponse | Notification | Ping | Unexpected


class Router:
    """Message ids, the latched session id, and incoming frames sorted into events."""

    def __init__(self) -> None:
        #: 0 until the robot assigns one (in the CreateSession response).
        self.session_id = 0
        self._message_id = 0

    def reset(self) -> None:
        """Forget the session (before a new CreateSession)."""
        self.session_id = 0

    def next_message_id(self) -> int:
        """Pre-incremented and wrapped at 65536 like the vendor's, so the first request is 1."""
        self._message_id = (self._message_id + 1) & 0xFFFF
        return self._message_id

    def request(self, function_uid: int, payload: bytes = b"", device_id: int = 0) -> tuple[int, bytes]:
        """(message id, serialized Frame) of a new request to `function_uid`."""
        message_id = self.next_message_id()
        header = Header(
            frame_type=FrameType.REQUEST,
            session_id=self.session_id,
            message_id=message_id,
            service_id=function_uid >> 16,
            function_id=function_uid & 0xFFFF,
            device_id=device_id,
        )
        return message_id, encode_frame(header, payload)

    def receive(self, data: bytes) -> Event:
        """Classify one serialized Frame; `ProtocolError` if it is not one."""
        frame = decode_frame(data)
        header = frame.header
        if header.frame_type == FrameType.RESPONSE:
            if frame.is_error:
                return ErrorResponse(header.message_id, decode_error(frame), frame)
            # The vendor client takes the session id from every response; the robot assigns it in
            # CreateSession's.
            if header.session_id:
                self.session_id = header.session_id
            return Response(header.message_id, frame)
        if header.frame_type == FrameType.NOTIFICATION:
            return Notification(header.service_id, header.message_id, frame)
        if header.frame_type == FrameType.PING:
            return Ping(encode_pong(header), frame)
        return Unexpected(frame)
