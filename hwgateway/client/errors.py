"""What a client call raises: the gateway's own error classes, chosen by `error.code`, plus lost connections."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.errors import (
    BadRequest,
    DeviceError,
    DeviceUnavailable,
    ErrorCode,
    GatewayError,
    InternalError,
    InvalidArgument,
    Locked,
    RateLimited,
    RequestTimeout,
    TooLarge,
    Unauthorized,
    UnknownCommand,
    UnknownDevice,
    UnknownOp,
)

__all__ = [
    "BadRequest",
    "ConnectionLost",
    "DeviceError",
    "DeviceUnavailable",
    "ErrorCode",
    "GatewayError",
    "GoingAway",
    "InternalError",
    "InvalidArgument",
    "Locked",
    "RateLimited",
    "RequestTimeout",
    "TooLarge",
    "Unauthorized",
    "UnknownCommand",
    "UnknownDevice",
    "UnknownOp",
    "error_from",
]


class GoingAway(GatewayError):
    """The gateway closed the connection because it is shutting down (`close` with `going_away`)."""

    code = ErrorCode.GOING_AWAY


class ConnectionLost(ConnectionError):
    """The connection to the gateway failed or ended before an answer came (not an error of the gateway's)."""


_CLASSES: dict[str, type[GatewayError]] = {
    cls.code.value: cls
    for cls in (
        BadRequest,
        UnknownOp,
        UnknownDevice,
        UnknownCommand,
        InvalidArgument,
        Unauthorized,
        Locked,
        RequestTimeout,
        DeviceError,
        DeviceUnavailable,
        RateLimited,
        TooLarge,
        InternalError,
        GoingAway,
    )
}


def error_from(error: object) -> GatewayError:
    """The exception for a result's `error {code, message}` (an unknown code becomes `InternalError`)."""
    if not isinstance(error, Mapping):
        return InternalError(f"malformed error from the gateway: {error!r}")
    code = str(error.get("code", ""))
    message = str(error.get("message", ""))
    cls = _CLASSES.get(code)
    if cls is None:
        return InternalError(f"{code}: {message}" if code else message)
    return cls(message)
