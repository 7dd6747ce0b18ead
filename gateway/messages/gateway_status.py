"""The gateway's own status as a message: what `/healthz` says, for faces that publish it (the ROS 2 face's node)."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import F64, STR, U32, Array, Nested, message, structure


@structure
class GatewayDevice:
    """One configured device in the status: its `id`, `kind`, availability `status` and `detail` (why not connected)."""

    id: Annotated[str, STR] = ""
    kind: Annotated[str, STR] = ""
    status: Annotated[str, STR] = ""
    detail: Annotated[str, STR] = ""


@message("hwgateway/GatewayStatus")
class GatewayStatus:
    """The gateway's health, as `/healthz` reports it.

    `status` is "ok", "degraded" (a device is not connected) or "unhealthy" (the event loop lags or a
    device task died); `reasons` says why it is not "ok"; `uptime_s` is seconds since the start;
    `clients` counts the connected clients of every face; `devices` lists every configured device.
    """

    status: Annotated[str, STR] = "ok"
    reasons: Annotated[tuple[str, ...], Array(STR)] = ()
    version: Annotated[str, STR] = ""
    uptime_s: Annotated[float, F64] = 0.0
    clients: Annotated[int, U32] = 0
    devices: Annotated[tuple[GatewayDevice, ...], Array(Nested(GatewayDevice))] = ()
