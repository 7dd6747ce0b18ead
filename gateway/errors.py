"""The gateway's one error hierarchy; each client-facing error carries a code from a closed set."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar

from protocols.errors import ProtocolError

__all__ = [
    "BadRequest",
    "ConfigError",
    "DeviceError",
    "DeviceUnavailable",
    "ErrorCode",
    "GatewayError",
    "InternalError",
    "InvalidArgument",
    "Locked",
    "ProtocolError",
    "RateLimited",
    "RequestTimeout",
    "TooLarge",
    "Unauthorized",
    "UnknownCommand",
    "UnknownDevice",
    "UnknownOp",
]


class ErrorCode(StrEnum):
    """Every `error.code` a client can receive in a `result` or a `close` message."""

    BAD_REQUEST = "bad_request"
    UNKNOWN_OP = "unknown_op"
    UNKNOWN_DEVICE = "unknown_device"
    UNKNOWN_COMMAND = "unknown_command"
    INVALID_ARGUMENT = "invalid_argument"
    UNAUTHORIZED = "unauthorized"
    TIMEOUT = "timeout"
    DEVICE_ERROR = "device_error"
    UNAVAILABLE = "unavailable"
    RATE_LIMITED = "rate_limited"
    TOO_LARGE = "too_large"
    INTERNAL_ERROR = "internal_error"
    GOING_AWAY = "going_away"
    LOCKED = "locked"


class GatewayError(Exception):
    """An error a client sees as `{"code": ..., "message": ...}`."""

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        """The `error` object of a result."""
        return {"code": self.code.value, "message": self.message}


class BadRequest(GatewayError):
    """The request envelope is malformed (not a map, no op, bad id, unknown or mistyped field)."""

    code = ErrorCode.BAD_REQUEST


class UnknownOp(GatewayError):
    """The `op` names no operation of this protocol version."""

    code = ErrorCode.UNKNOWN_OP


class UnknownDevice(GatewayError):
    """The device id is not configured."""

    code = ErrorCode.UNKNOWN_DEVICE


class UnknownCommand(GatewayError):
    """The command or message type does not exist or the device does not accept it."""

    code = ErrorCode.UNKNOWN_COMMAND


class InvalidArgument(GatewayError):
    """A value breaks its schema; the message starts with the failing field path."""

    code = ErrorCode.INVALID_ARGUMENT


class Unauthorized(GatewayError):
    """Authentication is required first, or the token was refused."""

    code = ErrorCode.UNAUTHORIZED


class Locked(GatewayError):
    """Another client holds the device's exclusive control lock; the message names its session."""

    code = ErrorCode.LOCKED


class RequestTimeout(GatewayError):
    """The device did not answer before the command's deadline."""

    code = ErrorCode.TIMEOUT


class DeviceError(GatewayError):
    """The device or its adapter failed to carry out the command."""

    code = ErrorCode.DEVICE_ERROR


class DeviceUnavailable(GatewayError):
    """The device is configured but not connected right now."""

    code = ErrorCode.UNAVAILABLE


class RateLimited(GatewayError):
    """The client sends requests faster than its allowance."""

    code = ErrorCode.RATE_LIMITED


class TooLarge(GatewayError):
    """The request is larger than the configured request size limit."""

    code = ErrorCode.TOO_LARGE


class InternalError(GatewayError):
    """A bug in the gateway; logged with its traceback."""

    code = ErrorCode.INTERNAL_ERROR


class ConfigError(Exception):
    """The configuration is invalid; `path` is the TOML key path (e.g. `devices.sim-1.rate_hz`).

    One error may stand for several: `errors` lists every problem found (itself when there is one),
    so a file is reported whole instead of one mistake per run.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
        self.errors: tuple[ConfigError, ...] = (self,)

    @classmethod
    def combine(cls, errors: Sequence[ConfigError]) -> ConfigError:
        """One error standing for all of `errors` (nested ones flattened, in order)."""
        flat = [problem for error in errors for problem in error.errors]
        if len(flat) == 1:
            return flat[0]
        combined = cls(flat[0].path, flat[0].message)
        combined.errors = tuple(flat)
        combined.args = ("\n".join(str(problem) for problem in flat),)
        return combined
