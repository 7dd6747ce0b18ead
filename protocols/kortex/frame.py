"""The Kortex `Frame` envelope: typed headers in, serialized frames out, and back (spec kortex.md §1.3).

`encode_frame` fills payload_info from the payload; `decode_frame` refuses what protobuf cannot
parse and frames without a header. The builders at the end serve the simulated arm and the client
(responses, errors, notifications, pongs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from protocols.errors import ProtocolError
from protocols.kortex.errors import ErrorCode, KortexError
from protocols.kortex.generated import Frame_pb2
from protocols.kortex.header import MAX_PAYLOAD_LENGTH, FrameType, Header

MessageT = TypeVar("MessageT", bound=Message)


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded frame: its header and raw payload bytes."""

    header: Header
    payload: bytes = b""

    @property
    def is_error(self) -> bool:
        """A response whose header carries a non-zero error code.

        The sub-code alone does not make an error: Kinova's client fails a request only when the
        errorCode nibble is not ERROR_NONE (kortex_api 2.6 `FrameHandler.manageReceivedFrame`), so
        error code 0 with a non-zero sub-code is a success.
        """
        return self.header.error_code != 0


def encode_frame(header: Header, payload: bytes = b"") -> bytes:
    """Serialize a frame; `header.payload_length` is replaced by the payload's real length."""
    if len(payload) > MAX_PAYLOAD_LENGTH:
        raise ProtocolError(f"payload of {len(payload)} bytes exceeds payload_info's {MAX_PAYLOAD_LENGTH} bytes")
    frame_info, message_info, service_info, _ = header.pack()
    payload_info = header.payload_reserved << 24 | len(payload)
    wire = Frame_pb2.Frame(
        header=Frame_pb2.Header(
            frame_info=frame_info, message_info=message_info, service_info=service_info, payload_info=payload_info
        ),
        payload=payload,
    )
    return wire.SerializeToString()


def decode_frame(data: bytes) -> Frame:
    """Parse one serialized Frame; `ProtocolError` if it is not one."""
    wire = Frame_pb2.Frame()
    try:
        wire.ParseFromString(data)
    except DecodeError as error:
        raise ProtocolError(f"not a Kortex Frame: {error}") from None
    if not wire.HasField("header"):
        raise ProtocolError("Kortex Frame without a header")
    h = wire.header
    return Frame(Header.unpack(h.frame_info, h.message_info, h.service_info, h.payload_info), wire.payload)


def parse_payload(cls: type[MessageT], payload: bytes) -> MessageT:
    """Parse a payload as protobuf message `cls`; `ProtocolError` on malformed bytes."""
    message = cls()
    try:
        message.ParseFromString(payload)
    except DecodeError as error:
        raise ProtocolError(f"payload is not a valid {cls.DESCRIPTOR.full_name}: {error}") from None
    return message


def decode_error(frame: Frame) -> KortexError:
    """The error of an error response, from its `Kinova.Api.Error` payload or else its header nibbles."""
    header = frame.header
    code, sub_code, text = header.error_code, header.error_sub_code, ""
    if frame.payload:
        try:
            error = parse_payload(Frame_pb2.Error, frame.payload)
        except ProtocolError:
            text = "undecodable error payload"
        else:
            # Like the vendor client: a payload without a code defers to the header.
            if int(error.error_code) != ErrorCode.ERROR_NONE:
                code, sub_code = int(error.error_code), error.error_sub_code
            text = error.error_sub_string
    return KortexError(code, sub_code, text, header.service_id, header.function_id)


def response_header(request: Header, session_id: int | None = None, sub_code: int = 0) -> Header:
    """The header answering `request` (same message, service and function ids)."""
    return Header(
        frame_type=FrameType.RESPONSE,
        session_id=request.session_id if session_id is None else session_id,
        message_id=request.message_id,
        service_id=request.service_id,
        function_id=request.function_id,
        device_id=request.device_id,
        error_sub_code=sub_code,
    )


def encode_response(request: Header, payload: bytes = b"", session_id: int | None = None, sub_code: int = 0) -> bytes:
    """A successful response to `request`; a non-zero `sub_code` with error code 0 is still a success."""
    return encode_frame(response_header(request, session_id, sub_code), payload)


def encode_error(request: Header, error_code: int, sub_code: int, text: str = "") -> bytes:
    """An error response to `request`: the codes in the header nibbles and in an `Error` payload."""
    header = response_header(request)
    header = Header(
        frame_type=header.frame_type,
        session_id=header.session_id,
        message_id=header.message_id,
        service_id=header.service_id,
        function_id=header.function_id,
        device_id=header.device_id,
        error_code=error_code,
        error_sub_code=sub_code,
    )
    payload = Frame_pb2.Error(error_code=error_code, error_sub_code=sub_code, error_sub_string=text)  # type: ignore[arg-type]
    return encode_frame(header, payload.SerializeToString())


def encode_notification(
    function_uid: int, handle: int, session_id: int, payload: bytes = b"", device_id: int = 0
) -> bytes:
    """A notification of subscription `handle` (carried in the message id) to session `session_id`."""
    return encode_frame(
        Header(
            frame_type=FrameType.NOTIFICATION,
            session_id=session_id,
            message_id=handle,
            service_id=function_uid >> 16,
            function_id=function_uid & 0xFFFF,
            device_id=device_id,
        ),
        payload,
    )


def encode_pong(ping: Header) -> bytes:
    """The answer to a PING frame."""
    return encode_frame(
        Header(
            frame_type=FrameType.PONG,
            session_id=ping.session_id,
            message_id=ping.message_id,
            service_id=ping.service_id,
            function_id=ping.function_id,
            device_id=ping.device_id,
        )
    )
