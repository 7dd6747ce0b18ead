"""A Python client for hwgateway: ``async with connect(url, token=...) as gw`` (asyncio) or `hwgateway.client.sync`.

Then ``await gw.devices()``, ``await gw.command(device, type, data)``, ``await gw.estop()`` and
``async for sample in gw.subscribe("sim-pad/**", max_rate_hz=30)``. Reference: docs/client.md.
"""

from hwgateway.client.connection import DeviceEvents, Gateway, Subscription, connect
from hwgateway.client.errors import (
    BadRequest,
    ConnectionLost,
    DeviceError,
    DeviceUnavailable,
    ErrorCode,
    GatewayError,
    GoingAway,
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
from hwgateway.client.models import DeviceEvent, DeviceInfo, EstopOutcome, Sample

__all__ = [
    "BadRequest",
    "ConnectionLost",
    "DeviceError",
    "DeviceEvent",
    "DeviceEvents",
    "DeviceInfo",
    "DeviceUnavailable",
    "ErrorCode",
    "EstopOutcome",
    "Gateway",
    "GatewayError",
    "GoingAway",
    "InternalError",
    "InvalidArgument",
    "Locked",
    "RateLimited",
    "RequestTimeout",
    "Sample",
    "Subscription",
    "TooLarge",
    "Unauthorized",
    "UnknownCommand",
    "UnknownDevice",
    "UnknownOp",
    "connect",
]
