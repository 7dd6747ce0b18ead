"""Pairing a Bluetooth device from the gateway: the admin `pair` op and the config of what was paired.

The pairing itself is `devices.bluez.pairing` (BlueZ over D-Bus); `hwgateway pair` runs it from the
command line (`gateway.cli`), the `pair` op from a running gateway. A paired Wii Remote comes with
its `[devices.<id>]` table, as `hwgateway scan` would write it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devices.bluez.pairing import PairOutcome


def config_of(outcome: PairOutcome, kind: str) -> str:
    """The `[devices.<id>]` table of a paired Wii Remote (`kind` wiimote); "" for anything else."""
    from devices.bluez.pairing import PAIRED, WIIMOTE
    from gateway.core.discovery import Finding, slug
    from gateway.scan import render

    if kind != WIIMOTE or outcome.outcome != PAIRED or not outcome.address:
        return ""
    finding = Finding(
        "wiimote",
        "wiimote-" + slug(outcome.address),
        outcome.address,
        f"{outcome.name or 'Wii Remote'} at {outcome.address} (paired)",
        {"address": outcome.address},
        ("address",),
    )
    return render([finding])


async def pair_op(kind: str, address: str, timeout_s: float | None, passkey: int | None) -> dict[str, Any]:
    """The admin `pair` op: one pairing window; its outcome with `config` (a paired Wii Remote's table).

    A bad request is `InvalidArgument`; BlueZ that cannot be used here (not running, no adapter,
    the adapter off, no permission) is `DeviceUnavailable` saying what to do.
    """
    from devices.bluez.dbus import BluezUnavailable
    from devices.bluez.pairing import DEFAULT_TIMEOUT_S, PairRequest, pair
    from gateway.errors import DeviceUnavailable, InvalidArgument

    request = PairRequest(kind, address, DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s, passkey)
    try:
        outcome = await pair(request)
    except ValueError as error:
        raise InvalidArgument(f"pair.{error}") from None
    except BluezUnavailable as error:
        raise DeviceUnavailable(f"pair: {error}") from None
    return {**outcome.as_dict(), "config": config_of(outcome, kind)}
