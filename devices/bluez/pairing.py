"""Pairing a Bluetooth device through BlueZ: one window with a timeout, progress in words, and a clear outcome.

A Wii Remote is paired by its red sync button (specs: wiimote.md §1.3): it answers the PIN BlueZ's
wiimote plugin gives (`devices.bluez.pin`), and only a remote paired that way and then connected
reconnects by itself when a button is pressed. So the pairing looks for the remote (any Wii Remote,
or the one at the address given) while discovering, pairs, trusts it and connects it at once (a
remote left unconnected turns itself off within seconds). A BLE device that needs pairing (a
micro:bit whose program asks for it, say) is paired by its address the same way; the agent
(`devices.bluez.agent`) confirms a passkey both sides show, or gives the one the request carries.

What a person can fix around the pairing (no D-Bus, BlueZ not running, no adapter, the adapter
off, no permission) raises `BluezUnavailable` naming it and what to do. The pairing itself always
ends in a `PairOutcome`: `paired`, `refused` (with why) or `timed_out` (with what to try).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from devices.bluez.dbus import (
    ADAPTER,
    AGENT_MANAGER,
    DEVICE,
    PROPERTIES,
    Adapter,
    BluezCallFailed,
    BluezUnavailable,
    call,
    connect_system_bus,
    managed_objects,
    powered_adapter,
)
from devices.bluez.pin import wiimote_pin
from devices.wiimote.discovery import NAMES

if TYPE_CHECKING:
    from dbus_fast.aio import MessageBus

    from devices.bluez.agent import PairingAgent

log = logging.getLogger(__name__)

WIIMOTE = "wiimote"
BLE = "ble"
#: What can be paired: Wii Remotes (by their sync button) and Bluetooth LE devices (by address).
KINDS = (WIIMOTE, BLE)
#: The pairing window, in seconds: by default, and its bounds.
DEFAULT_TIMEOUT_S = 30.0
MIN_TIMEOUT_S = 1.0
MAX_TIMEOUT_S = 120.0
#: How often BlueZ's devices are looked at while waiting for the one to pair, in seconds.
POLL_S = 0.25
#: Seconds given to cleaning up (CancelPairing, StopDiscovery) after the window closed.
CLEANUP_S = 3.0
#: Seconds a connection right after pairing may take, at least (a Wii Remote needs it at once).
CONNECT_S = 10.0
AGENT_PATH = "/org/hwgateway/pairing_agent"
#: The outcomes of a pairing.
PAIRED = "paired"
REFUSED = "refused"
TIMED_OUT = "timed_out"

_SYNC_HINT = (
    "press the red sync button of the Wii Remote (under its battery cover) and keep it blinking; "
    "press it again if its LEDs stop"
)


@dataclass(frozen=True, slots=True)
class PairRequest:
    """What to pair: `kind` (of `KINDS`), `address` (AA:BB:CC:DD:EE:FF; empty: the first Wii Remote seen).

    `timeout_s` is the whole window in seconds; `passkey` the number a BLE device shows and asks
    to be typed in (None: such a device is refused, saying to give it).
    """

    kind: str = WIIMOTE
    address: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S
    passkey: int | None = None


@dataclass
class PairOutcome:
    """How a pairing ended: `outcome` (paired, refused, timed_out), `message` in words, and each step taken."""

    outcome: str
    message: str
    address: str = ""
    name: str = ""
    adapter: str = ""
    paired: bool = False
    trusted: bool = False
    connected: bool = False
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The outcome as plain data (the `pair` op's result, `--json`)."""
        return asdict(self)


def check_request(request: PairRequest) -> None:
    """`ValueError` naming what is wrong with `request` (kind, address, timeout, passkey)."""
    if request.kind not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {request.kind!r}")
    if request.address and not _is_address(request.address):
        raise ValueError(f"address: expected AA:BB:CC:DD:EE:FF, got {request.address!r}")
    if request.kind == BLE and not request.address:
        raise ValueError("address: a BLE device is paired by its address (`hwgateway scan` lists it)")
    if not MIN_TIMEOUT_S <= request.timeout_s <= MAX_TIMEOUT_S:
        raise ValueError(f"timeout_s: expected {MIN_TIMEOUT_S:g} to {MAX_TIMEOUT_S:g} s, got {request.timeout_s:g}")
    if request.passkey is not None and not 0 <= request.passkey <= 999_999:
        raise ValueError(f"passkey: expected 0 to 999999, got {request.passkey}")


def _is_address(text: str) -> bool:
    parts = text.split(":")
    return len(parts) == 6 and all(len(p) == 2 and all(c in "0123456789abcdefABCDEF" for c in p) for p in parts)


async def pair(
    request: PairRequest, progress: Callable[[str], None] | None = None, bus: MessageBus | None = None
) -> PairOutcome:
    """Pair as `request` says within its window, telling each step to `progress`; `bus`: None, the system bus.

    Raises `ValueError` for a bad request and `BluezUnavailable` when BlueZ cannot be used here.
    """
    check_request(request)
    steps: list[str] = []

    def say(text: str) -> None:
        steps.append(text)
        log.info("pair: %s", text)
        if progress is not None:
            progress(text)

    own = bus is None
    if bus is None:
        bus = await connect_system_bus()
    try:
        adapter = await powered_adapter(bus)
        say(f"adapter {adapter.path.rsplit('/', 1)[-1]} ({adapter.address}) is on")
        outcome = await _with_agent(bus, adapter, request, say)
    finally:
        if own:
            bus.disconnect()
    outcome.steps = steps
    outcome.adapter = adapter.address
    return outcome


async def _with_agent(
    bus: MessageBus, adapter: Adapter, request: PairRequest, say: Callable[[str], None]
) -> PairOutcome:
    from devices.bluez.agent import PairingAgent

    pin = wiimote_pin(adapter.address) if request.kind == WIIMOTE else None
    agent = PairingAgent(pin, request.passkey, say)
    bus.export(AGENT_PATH, agent)
    try:
        await call(bus, "/org/bluez", AGENT_MANAGER, "RegisterAgent", "os", [AGENT_PATH, "KeyboardDisplay"])
        try:
            return await _pair_within(bus, adapter, agent, request, say)
        finally:
            agent.open = False
            with contextlib.suppress(BluezCallFailed, BluezUnavailable, TimeoutError):
                async with asyncio.timeout(CLEANUP_S):
                    await call(bus, "/org/bluez", AGENT_MANAGER, "UnregisterAgent", "o", [AGENT_PATH])
    finally:
        bus.unexport(AGENT_PATH, agent)


async def _pair_within(
    bus: MessageBus, adapter: Adapter, agent: PairingAgent, request: PairRequest, say: Callable[[str], None]
) -> PairOutcome:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.timeout_s
    found = await _find(bus, adapter, request, deadline, say)
    if found is None:
        if request.kind == WIIMOTE:
            what = f"the Wii Remote {request.address} was not seen" if request.address else "no Wii Remote was seen"
            message = (
                f"{what} within {request.timeout_s:g} s: {_SYNC_HINT} while pairing runs "
                "(1+2 also makes it visible, for a session without pairing)"
            )
        else:
            message = (
                f"{request.address} was not seen within {request.timeout_s:g} s: is it on, near, "
                "and advertising (in pairing mode)?"
            )
        return PairOutcome(TIMED_OUT, message, request.address.lower())
    path, props = found
    address = str(props.get("Address", request.address)).lower()
    name = str(props.get("Name", props.get("Alias", "")))
    agent.target = path
    outcome = PairOutcome(PAIRED, "", address, name)
    if bool(props.get("Paired", False)):
        say(f"{name or address} is paired already")
    else:
        say(f"pairing with {name or 'the device'} at {address}")
        try:
            async with asyncio.timeout_at(deadline):
                await call(bus, path, DEVICE, "Pair")
        except TimeoutError:
            with contextlib.suppress(BluezCallFailed, BluezUnavailable, TimeoutError):
                async with asyncio.timeout(CLEANUP_S):
                    await call(bus, path, DEVICE, "CancelPairing")
            say("pairing cancelled: the window closed")
            outcome.outcome = TIMED_OUT
            outcome.message = f"{name or address} did not finish pairing within {request.timeout_s:g} s" + (
                f": {_SYNC_HINT}, then pair again" if request.kind == WIIMOTE else ": is it waiting for a passkey?"
            )
            return outcome
        except BluezCallFailed as error:
            if error.name != "org.bluez.Error.AlreadyExists":
                outcome.outcome = REFUSED if error.name != "org.bluez.Error.AuthenticationTimeout" else TIMED_OUT
                outcome.message = agent.refusal or _explain(error, request.kind)
                say(f"pairing failed: {outcome.message}")
                return outcome
        say("paired")
    outcome.paired = True
    await _trust(bus, path, outcome, say)
    await _connect(bus, path, outcome, say, max(deadline - loop.time(), CONNECT_S))
    outcome.message = f"{name or address} at {address} is paired" + (
        ", trusted and connected" if outcome.trusted and outcome.connected else f" ({'; '.join(_missing(outcome))})"
    )
    return outcome


def _missing(outcome: PairOutcome) -> list[str]:
    missing = []
    if not outcome.trusted:
        missing.append("not trusted: it may not reconnect by itself")
    if not outcome.connected:
        missing.append("not connected now: press a button on it to connect")
    return missing


async def _find(
    bus: MessageBus, adapter: Adapter, request: PairRequest, deadline: float, say: Callable[[str], None]
) -> tuple[str, dict[str, Any]] | None:
    """The device to pair (its path and Device1 properties), discovering until `deadline` if BlueZ has not seen it."""
    from dbus_fast import Variant

    found = _match(await managed_objects(bus), adapter, request)
    if found is not None and (found[1].get("Paired") or found[1].get("Connected") or request.kind != WIIMOTE):
        return found
    # A Wii Remote BlueZ remembers from before is paired only while it is discoverable: discover anyway.
    say(_SYNC_HINT if request.kind == WIIMOTE else f"looking for {request.address}: put it in pairing mode")
    # A Wii Remote is a classic (BR/EDR) device, the others Bluetooth LE: discover only the one radio.
    transport = Variant("s", "bredr" if request.kind == WIIMOTE else "le")
    with contextlib.suppress(BluezCallFailed):  # a BlueZ without filters discovers both
        await call(bus, adapter.path, ADAPTER, "SetDiscoveryFilter", "a{sv}", [{"Transport": transport}])
    try:
        await call(bus, adapter.path, ADAPTER, "StartDiscovery")
    except BluezCallFailed as error:
        if error.name != "org.bluez.Error.InProgress":  # someone else's discovery serves as well
            raise BluezUnavailable(f"the adapter cannot discover ({error}): is it blocked (`rfkill list`)?") from None
    loop = asyncio.get_running_loop()
    try:
        while True:
            found = _match(await managed_objects(bus), adapter, request)
            if found is not None and (found[1].get("RSSI") is not None or request.kind != WIIMOTE):
                say(f"found {found[1].get('Name', '') or 'it'} at {str(found[1].get('Address', '')).lower()}")
                return found
            if loop.time() + POLL_S > deadline:
                return None
            await asyncio.sleep(POLL_S)
    finally:
        # BlueZ pairs better without an inquiry running beside it (and the window is over anyway).
        with contextlib.suppress(BluezCallFailed, BluezUnavailable, TimeoutError):
            async with asyncio.timeout(CLEANUP_S):
                await call(bus, adapter.path, ADAPTER, "StopDiscovery")


def _match(
    objects: dict[str, dict[str, dict[str, Any]]], adapter: Adapter, request: PairRequest
) -> tuple[str, dict[str, Any]] | None:
    """The device of `adapter` the request is for: by address, or (a Wii Remote, no address) by name."""
    for path, interfaces in sorted(objects.items()):
        props = interfaces.get(DEVICE)
        if props is None or not path.startswith(adapter.path + "/"):
            continue
        if request.address:
            if str(props.get("Address", "")).lower() == request.address.lower():
                return path, props
        elif str(props.get("Name", "")) in NAMES:
            return path, props
    return None


async def _trust(bus: MessageBus, path: str, outcome: PairOutcome, say: Callable[[str], None]) -> None:
    from dbus_fast import Variant

    try:
        await call(bus, path, PROPERTIES, "Set", "ssv", [DEVICE, "Trusted", Variant("b", True)])
    except BluezCallFailed as error:
        say(f"could not mark it trusted ({error})")
        return
    outcome.trusted = True
    say("trusted: it may reconnect by itself")


async def _connect(
    bus: MessageBus, path: str, outcome: PairOutcome, say: Callable[[str], None], timeout_s: float
) -> None:
    try:
        async with asyncio.timeout(timeout_s):
            await call(bus, path, DEVICE, "Connect")
    except TimeoutError:
        say(f"not connected within {timeout_s:g} s")
        return
    except BluezCallFailed as error:
        if error.name != "org.bluez.Error.AlreadyConnected":
            say(f"not connected now ({error})")
            return
    outcome.connected = True
    say("connected")


#: What each of BlueZ's pairing errors means for the person pairing.
_ERRORS = {
    "org.bluez.Error.AuthenticationFailed": "the device refused the PIN or key",
    "org.bluez.Error.AuthenticationRejected": "the pairing was rejected",
    "org.bluez.Error.AuthenticationCanceled": "the pairing was cancelled",
    "org.bluez.Error.AuthenticationTimeout": "the device did not answer in time",
    "org.bluez.Error.ConnectionAttemptFailed": "the device could not be reached: is it on and near?",
    "org.bluez.Error.InProgress": "another pairing of this device is under way (bluetoothctl?): let it end first",
}


def _explain(error: BluezCallFailed, kind: str) -> str:
    """BlueZ's pairing error in words, with what to try for the kind of device."""
    said = _ERRORS.get(error.name, f"BlueZ answered {error}")
    if kind == WIIMOTE and error.name in (
        "org.bluez.Error.AuthenticationFailed",
        "org.bluez.Error.AuthenticationRejected",
    ):
        return (
            f"{said}: pair by the red sync button (not 1+2), pressing it again if the LEDs stop; "
            "some BlueZ releases above 5.72 fail to pair Wii Remotes"
        )
    return said
