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


#: The optional dependencies ("extras") a kind needs: the extra's name and a module it provides.
#: The kind's adapter cannot run without it, so the config check refuses the kind (check-config).
_EXTRAS: dict[str, tuple[str, str]] = {
    "gamepad": ("gamepad", "devices.gamepad.sdl_backend"),  # PySDL2 and an SDL2 library
    "lego_hub": ("ble", "bleak"),
    "microbit": ("ble", "bleak"),
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


def missing_extra(kind: str) -> str | None:
    """Why `kind` cannot run here when its extra is not installed (importing the extra's module); None when it can.

    The module is really imported, not just found: PySDL2 installed without an SDL2 library fails here too.
    """
    if kind not in _EXTRAS:
        return None
    extra, module = _EXTRAS[kind]
    try:
        importlib.import_module(module)
    except ImportError as error:  # also what PySDL2 raises when it finds no SDL2 library
        return (
            f"kind {kind!r} needs the {extra!r} extra, which is not installed here ({error}): "
            f"pip install 'hwgateway[{extra}]' in the gateway's environment "
            f"(the service: sudo EXTRAS={extra} make install, or the default, which installs every extra)"
        )
    return None
