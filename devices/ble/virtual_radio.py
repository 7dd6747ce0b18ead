"""An in-process Bluetooth LE radio: Google Bumble's virtual controllers on one `LocalLink`.

One central `Device` (the gateway's side, driven through bleak by `devices.ble.bumble_backend`) and any
number of peripherals (the simulated micro:bit and LEGO hubs, Bumble GATT servers). Advertising,
scanning, connections, ATT and disconnects all run the real Bumble host and controller code; no
kernel, BlueZ, D-Bus or radio is involved.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import weakref
from collections.abc import Callable
from typing import Any

from bumble.controller import Controller
from bumble.core import BT_LE_TRANSPORT
from bumble.device import Connection, Device
from bumble.hci import Address
from bumble.host import Host
from bumble.link import LocalLink
from bumble.transport.common import AsyncPipeSink

AdvertisementListener = Callable[[Any], None]


class VirtualRadio:
    """A shared virtual LE link: `peripheral()` makes devices on it, `connect()` reaches them from the central."""

    def __init__(self) -> None:
        self.link = LocalLink()  # type: ignore[no-untyped-call]
        self._numbers = itertools.count(1)
        self._central: Device | None = None
        self._central_ready: asyncio.Lock | None = None
        self._connecting: asyncio.Lock | None = None
        self._listeners: dict[object, AdvertisementListener] = {}
        self._scanners = 0

    def _device(self, name: str, address: str) -> Device:
        controller = Controller(name, link=self.link, public_address=address)
        device = Device(name=name, address=Address(address), host=Host(controller, AsyncPipeSink(controller)))
        return device

    def peripheral(self, name: str) -> Device:
        """A new powered-off Bumble device on this link, with a random static address of its own."""
        number = next(self._numbers)
        # Random static addresses have the two top bits set.
        address = f"C0:DE:00:00:{number >> 8:02X}:{number & 0xFF:02X}"
        return self._device(name, address)

    async def central(self) -> Device:
        """The gateway's central device, powered on at first use."""
        if self._central_ready is None:
            self._central_ready = asyncio.Lock()
        async with self._central_ready:
            if self._central is None:
                central = self._device("hwgateway", "C0:DE:FF:FF:FF:FF")
                central.on(central.EVENT_ADVERTISEMENT, self._on_advertisement)
                await central.power_on()
                self._central = central
        return self._central

    def _on_advertisement(self, advertisement: Any) -> None:
        for listener in list(self._listeners.values()):
            listener(advertisement)

    async def start_scanning(self, listener: AdvertisementListener) -> object:
        """Deliver every advertisement to `listener` until `stop_scanning` with the returned token."""
        central = await self.central()
        token = object()
        self._listeners[token] = listener
        self._scanners += 1
        if self._scanners == 1:
            await central.start_scanning(active=True, filter_duplicates=False)
        return token

    async def stop_scanning(self, token: object) -> None:
        """Stop delivering to the listener of `token`; the central stops scanning with the last one."""
        if self._listeners.pop(token, None) is None:
            return
        self._scanners -= 1
        if self._scanners == 0 and self._central is not None:
            with contextlib.suppress(Exception):
                await self._central.stop_scanning()

    async def connect(self, address: str, timeout_s: float) -> Connection:
        """Open an LE connection to `address` (one connection attempt at a time, as a controller allows)."""
        central = await self.central()
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            connection: Connection = await central.connect(
                Address(address), transport=BT_LE_TRANSPORT, timeout=timeout_s
            )
            return connection


_RADIOS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, VirtualRadio] = weakref.WeakKeyDictionary()


def shared_radio() -> VirtualRadio:
    """The one virtual radio of the running event loop (every simulated BLE device of the daemon is on it)."""
    loop = asyncio.get_running_loop()
    radio = _RADIOS.get(loop)
    if radio is None:
        radio = _RADIOS[loop] = VirtualRadio()
    return radio
