"""Read-only Foxglove parameters: the gateway's version and limits, and each device's facts."""

from __future__ import annotations

from typing import Any

from gateway import PROTOCOL_VERSION, __version__
from gateway.core.client import Client

#: Server settings shown as `/gateway/server/<name>` (addresses and limits; never TLS file paths).
SERVER_FIELDS = (
    "host",
    "http_port",
    "msgpack_port",
    "max_request_bytes",
    "max_frame_bytes",
    "command_timeout_s",
    "max_requests_per_s",
    "max_inflight_commands",
)


def _parameter(name: str, value: Any) -> dict[str, Any]:
    """One `parameterValues` entry, typed as foxglove-sdk types floats and float arrays."""
    if isinstance(value, float):
        return {"name": name, "type": "float64", "value": value}
    if isinstance(value, list) and value and all(isinstance(v, float) for v in value):
        return {"name": name, "type": "float64_array", "value": value}
    return {"name": name, "value": value}


def all_parameters(client: Client, foxglove_port: int | None) -> list[dict[str, Any]]:
    """Every parameter, in a stable order."""
    server = client.hub.server
    values: list[tuple[str, Any]] = [
        ("/gateway/version", __version__),
        ("/gateway/protocol", PROTOCOL_VERSION),
        ("/gateway/client_id", client.id),
    ]
    values += [(f"/gateway/server/{name}", getattr(server, name)) for name in SERVER_FIELDS]
    values.append(("/gateway/server/tls", bool(server.tls_cert)))
    if foxglove_port is not None:
        values.append(("/gateway/foxglove/port", foxglove_port))
    for device in client.list_devices():
        prefix = f"/devices/{device['id']}/"
        values += [
            (prefix + "kind", device["kind"]),
            (prefix + "status", device["status"]),
            (prefix + "detail", device["detail"]),
            (prefix + "publishes", device["publishes"]),
            (prefix + "accepts", device["accepts"]),
            (prefix + "topics", device["topics"]),
            (prefix + "locked_by", device["locked_by"] or ""),
        ]
    return [_parameter(name, value) for name, value in values]


def select(parameters: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The parameters named in `names` (all of them when `names` is empty), unknown names left out."""
    if not names:
        return parameters
    wanted = set(names)
    return [parameter for parameter in parameters if parameter["name"] in wanted]
