"""Finding gamepads through SDL: each joystick's name, GUID, device path, and whether SDL has a mapping for it.

A joystick without a game controller mapping is listed too (the adapter cannot use it until a
mapping file gives one). SDL's own virtual joysticks (a running demo's) are left out unless asked.
"""

from __future__ import annotations

from collections import Counter

from devices.gamepad.sdl_backend import PresentPad, acquire, release
from gateway.core.discovery import Finding, slug


async def scan_gamepads(include_virtual: bool = False) -> list[Finding]:
    """One finding per joystick SDL sees (virtual ones only with `include_virtual`)."""
    backend = acquire()
    try:
        await backend.ready()
        pads = [pad for pad in await backend.present() if include_virtual or not pad.virtual]
    finally:
        await release(backend)
    same_model = Counter(pad.guid for pad in pads)
    findings = []
    for number, pad in enumerate(pads, 1):
        findings.append(_finding(pad, number, same_model[pad.guid] > 1))
    return findings


def _finding(pad: PresentPad, number: int, shared_guid: bool) -> Finding:
    options: dict[str, object] = {"guid": pad.guid}
    match = ["guid"]
    notes = []
    if shared_guid and pad.path:
        # Two pads of one model share a GUID: the device node tells them apart (until replugged elsewhere).
        options["path"] = pad.path
        match.append("path")
        notes.append("another pad of the same model is attached: `path` picks this one (it may change on replug)")
    if not pad.mapped:
        notes.append(
            "SDL knows no game controller mapping for this GUID: add one in a mapping_files file "
            "(SDL GameControllerDB format) before the gateway can use it"
        )
    kind = "virtual pad" if pad.virtual else "gamepad"
    mapping = "mapping known" if pad.mapped else "no mapping"
    return Finding(
        "gamepad",
        slug(f"pad-{pad.name}")[:60] + ("" if not shared_guid else f"-{number}"),
        pad.path or f"SDL joystick {number}",
        f"{kind} {pad.name!r} (GUID {pad.guid}, {mapping})",
        options,
        tuple(match),
        tuple(notes),
    )
