"""Generic gamepads through SDL2's GameController API (PySDL2 + pysdl2-dll, the `gamepad` extra).

Device model: each `[devices.<id>]` table of `kind = "gamepad"` is one device whose id is the
config id, bound to one pad chosen by GUID, serial, path or name (or the first free pad). That
keeps ids stable (never an SDL index), lets the supervisor report each pad's availability and
restart it on its own, and gives every pad its own topics. The pad's hardware identity (GUID plus
serial or path) is published on `<id>/info` and in `list_devices`. Hot-plug: the device is
`connecting` while no matching pad is attached, `connected` while one is, and goes through
`disconnected` back to `connecting` when it is unplugged.

Modules: `normalize` (raw SDL values → ControllerState, pure), `mappings` (GameControllerDB files,
pure), `model` (what the SDL thread and the adapter exchange), `sdl_backend` (the one thread that
calls SDL, shared by all gamepad devices), `sdl_virtual` (SDL virtual pads for tests and the demo),
`adapter` (the `gamepad` kind).
"""
