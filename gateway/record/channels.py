"""The recording's own channels besides the bus topics: availability, commands and their results.

`_gateway/device` (`hwgateway/DeviceEvent`): every availability or lock change, as the `device` push.
`_gateway/command` (`hwgateway/CommandRecord`): each command when the gateway receives it, from any
client of any face (log time = receipt). `_gateway/command_result` (`hwgateway/CommandResultRecord`):
its outcome when answered (log time = answer), linked by `command` (a per-gateway number).

The schemas use only what the Foxglove and Lichtblick apps' parser takes (no type unions, no field
without a type): a field that may be null says so in its description, and free-form data is an object
with no declared fields (the apps show its contents as they are).
"""

from __future__ import annotations

from typing import Any

DEVICE_TOPIC = "_gateway/device"
DEVICE_TYPE = "hwgateway/DeviceEvent"
COMMAND_TOPIC = "_gateway/command"
COMMAND_TYPE = "hwgateway/CommandRecord"
RESULT_TOPIC = "_gateway/command_result"
RESULT_TYPE = "hwgateway/CommandResultRecord"

DEVICE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "device": {"type": "string"},
        "kind": {"type": "string"},
        "status": {"type": "string", "enum": ["connecting", "connected", "disconnected", "stopped"]},
        "detail": {"type": "string"},
        "stamp": {"type": "number", "description": "s since the epoch"},
        "locked_by": {"type": "string", "description": "the client holding the lock; null when none"},
    },
}
COMMAND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "integer", "description": "the gateway's number of this command"},
        "client": {"type": "string", "description": "the commanding client's id (c1, c2, ...)"},
        "device": {"type": "string", "description": "the device id, or * for estop"},
        "type": {"type": "string", "description": "the command's message type, or estop"},
        "data": {"type": "object", "properties": {}, "description": "the command's data as the client sent it"},
        "stamp": {"type": "number", "description": "receipt time, s since the epoch"},
    },
}
RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "integer", "description": "the number of the command this answers"},
        "client": {"type": "string"},
        "device": {"type": "string"},
        "type": {"type": "string"},
        "ok": {"type": "boolean"},
        "data": {"type": "object", "properties": {}, "description": "the result's data (ok)"},
        "error": {
            "type": "object",
            "description": "null when ok",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        },
        "latency_s": {"type": "number", "description": "receipt to answer, s"},
        "stamp": {"type": "number", "description": "answer time, s since the epoch"},
    },
}
OWN_SCHEMAS: dict[str, dict[str, Any]] = {
    DEVICE_TYPE: DEVICE_SCHEMA,
    COMMAND_TYPE: COMMAND_SCHEMA,
    RESULT_TYPE: RESULT_SCHEMA,
}
