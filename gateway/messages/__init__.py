"""Every message type of the bus, registered by its ecosystem name (e.g. ``wiimote/State``).

Importing this package registers them all in `REGISTRY`.
"""

from gateway.messages import (
    aseba_gateway,
    asebaros,
    binding,
    common,
    creos,
    gamepad,
    gateway_status,
    generic,
    kortex,
    lego,
    microbit,
    replay,
    sim,
    thymio,
    wiimote,
    wiimote_gateway,
)
from gateway.messages.schema import REGISTRY, MessageInfo, from_plain, info_of, schema_of, to_plain, type_name

__all__ = [
    "REGISTRY",
    "MessageInfo",
    "aseba_gateway",
    "asebaros",
    "binding",
    "common",
    "creos",
    "from_plain",
    "gamepad",
    "gateway_status",
    "generic",
    "info_of",
    "kortex",
    "lego",
    "microbit",
    "replay",
    "schema_of",
    "sim",
    "thymio",
    "to_plain",
    "type_name",
    "wiimote",
    "wiimote_gateway",
]
