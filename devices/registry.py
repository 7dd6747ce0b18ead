"""The adapter kinds of this gateway by config name; the composition root hands `KINDS` to config and supervisor.

Each adapter's module is imported only when a device of its kind is configured.
"""

from __future__ import annotations

from gateway.core.adapter import DeviceKinds

KINDS = DeviceKinds(
    {
        "aseba": "devices.aseba.adapter:AsebaAdapter",
        "gamepad": "devices.gamepad.adapter:GamepadAdapter",
        "kortex": "devices.kortex.adapter:KortexAdapter",
        "lego_hub": "devices.lego.adapter:LegoHubAdapter",
        "microbit": "devices.microbit.adapter:MicrobitAdapter",
        "replay": "devices.replay.adapter:ReplayAdapter",
        "sim": "devices.sim.controller:SimController",
        "wiimote": "devices.wiimote.adapter:WiimoteAdapter",
    },
    # The optional dependencies ("extras") a kind needs: the extra's name and a module it provides.
    # The kind's adapter cannot run without it, so the config check refuses the kind (check-config).
    extras={
        "gamepad": ("gamepad", "devices.gamepad.sdl_backend"),  # PySDL2 and an SDL2 library
        "lego_hub": ("ble", "bleak"),
        "microbit": ("ble", "bleak"),
    },
)
