"""Adapter kinds by config name; modules are imported only when a kind is used."""

from __future__ import annotations

import importlib
from typing import Any

from devices.base import Adapter

_KINDS: dict[str, str] = {
    "aseba": "devices.aseba.adapter:AsebaAdapter",
    "gamepad": "devices.gamepad.adapter:GamepadAdapter",
    "kortex": "devices.kortex.adapter:KortexAdapter",
    "lego_hub": "devices.lego.adapter:LegoHubAdapter",
    "microbit": "devices.microbit.adapter:MicrobitAdapter",
    "replay": "devices.replay.adapter:ReplayAdapter",
    "sim": "devices.sim.controller:SimController",
    "wiimote": "devices.wiimote.adapter:WiimoteAdapter",
}


def kinds() -> list[str]:
    """Every adapter kind the configuration accepts."""
    return sorted(_KINDS)


def adapter_class(kind: str) -> type[Adapter[Any]]:
    """The adapter class of `kind`; raise `KeyError` with a readable message for an unknown kind."""
    try:
        module_name, class_name = _KINDS[kind].split(":")
    except KeyError:
        raise KeyError(f"unknown device kind {kind!r} (known kinds: {', '.join(kinds())})") from None
    cls: type[Adapter[Any]] = getattr(importlib.import_module(module_name), class_name)
    return cls


def options_class(kind: str) -> type[Any]:
    """The options dataclass that `[devices.<id>]` tables of `kind` are read into."""
    return adapter_class(kind).options_class
