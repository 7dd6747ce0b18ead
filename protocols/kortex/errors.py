"""Kortex error codes and sub-codes by name, and the error a response frame carries (spec kortex.md §4.1).

An error travels as an ordinary response with non-zero error nibbles in frame_info and, usually, a
serialized `Kinova.Api.Error` payload. The names come from the generated `SubErrorCodes` enum, so
the .proto file is their one source.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from protocols.kortex.generated import Frame_pb2


class ErrorCode(IntEnum):
    """The 4-bit errorCode of frame_info (Kinova.Api.ErrorCodes)."""

    ERROR_NONE = 0
    ERROR_PROTOCOL_SERVER = 1
    ERROR_PROTOCOL_CLIENT = 2
    ERROR_DEVICE = 3
    ERROR_INTERNAL = 4


#: The 12-bit errorSubCode (Kinova.Api.SubErrorCodes): ``SubErrorCodes.Name(5) == "UNSUPPORTED_METHOD"``.
SubErrorCodes = Frame_pb2.SubErrorCodes


def error_name(code: int) -> str:
    """The name of an error code, or ``ERROR_<n>`` for one this gateway does not know."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"ERROR_{code}"


def sub_error_name(code: int) -> str:
    """The name of a sub-code, or ``SUB_ERROR_<n>`` for one this gateway does not know."""
    try:
        return SubErrorCodes.Name(code)
    except ValueError:
        return f"SUB_ERROR_{code}"


def sub_error_code(name: str) -> int:
    """The value of a sub-code name such as ``"INVALID_SESSION"``; `KeyError` if unknown."""
    try:
        return SubErrorCodes.Value(name)
    except ValueError:
        raise KeyError(f"unknown Kortex sub-error {name!r}") from None


@dataclass(frozen=True, slots=True)
class KortexError:
    """What the robot refused: codes from the payload (or the header when the payload has none)."""

    error_code: int
    sub_code: int
    text: str = ""
    service_id: int = 0
    function_id: int = 0

    @property
    def error_name(self) -> str:
        """E.g. ``ERROR_DEVICE``."""
        return error_name(self.error_code)

    @property
    def sub_name(self) -> str:
        """E.g. ``ROBOT_IN_FAULT``."""
        return sub_error_name(self.sub_code)

    def __str__(self) -> str:
        where = f"<srv: {self.service_id}, fct: {self.function_id}>"
        detail = f": {self.text}" if self.text else ""
        return f"{self.error_name}/{self.sub_name} {where}{detail}"
