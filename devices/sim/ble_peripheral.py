"""What the simulated BLE peripherals share: a Bumble device on a virtual radio, advertising, and a drop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from bumble import att, gatt
from bumble.core import AdvertisingData
from bumble.device import Connection, Device

from devices.ble.virtual_radio import VirtualRadio

log = logging.getLogger(__name__)

P = gatt.Characteristic.Properties
READABLE = gatt.Characteristic.READABLE
WRITEABLE = gatt.Characteristic.WRITEABLE
Reader = Callable[[Connection], bytes]
Writer = Callable[[Connection, bytes], None]


def characteristic(
    uuid: str, properties: P, read: Reader | None = None, write: Writer | None = None
) -> gatt.Characteristic[bytes]:
    """A characteristic whose value comes from `read` and goes to `write` (either may be None)."""
    permissions = (READABLE if read else 0) | (WRITEABLE if write else 0)
    value = gatt.CharacteristicValue(read=read, write=write)
    return gatt.Characteristic(uuid, properties, gatt.Characteristic.Permissions(permissions), value)


def att_error(code: att.ErrorCode) -> att.ATT_Error:
    """The ATT error a handler raises so that the client receives an ATT Error Response."""
    # A plain Python exception in a Bumble handler sends nothing: the client would wait for a timeout.
    return att.ATT_Error(code)


class SimulatedPeripheral:
    """A Bumble GATT server advertising `name` on `radio`; subclasses add services before `start`."""

    def __init__(self, radio: VirtualRadio, name: str) -> None:
        self.radio = radio
        self.name = name
        self.device: Device = radio.peripheral(name)
        self.connections = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._started = False
        self.device.on(self.device.EVENT_CONNECTION, self._on_connection)

    @property
    def address(self) -> str:
        """The peripheral's Bluetooth address."""
        return str(self.device.random_address).split("/")[0]

    def services(self) -> Sequence[gatt.Service]:
        """The GATT services to serve (subclasses)."""
        return ()

    def advertising(self) -> tuple[bytes, bytes]:
        """Advertising data and scan response (subclasses)."""
        return bytes(AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, self.name.encode())])), b""

    async def start(self) -> None:
        """Serve the services and advertise (again after every disconnection)."""
        if not self._started:
            self.device.add_services(list(self.services()))
            await self.device.power_on()
            self._started = True
        if self.device.is_advertising or self.device.connections:
            return
        data, scan_response = self.advertising()
        await self.device.start_advertising(
            advertising_data=data,
            scan_response_data=scan_response or None,
            auto_restart=True,
            advertising_interval_min=20,
        )

    def _on_connection(self, connection: Connection) -> None:
        self.connections += 1
        connection.on(connection.EVENT_DISCONNECTION, lambda *_: self.on_disconnected())
        self.on_connected()

    def on_connected(self) -> None:
        """A central connected (subclasses)."""

    def on_disconnected(self) -> None:
        """The central went away (subclasses)."""

    def spawn(self, coroutine: asyncio.Future[None] | asyncio.Task[None] | object) -> None:
        """Run a background coroutine owned by this peripheral (cancelled by `stop`)."""
        task: asyncio.Task[None] = asyncio.ensure_future(coroutine)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drop(self) -> None:
        """Disconnect from the peripheral's side (as when it is switched off or walks out of range)."""
        for connection in list(self.device.connections.values()):
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await connection.disconnect()

    async def stop(self) -> None:
        """Stop advertising, drop the central and end the background tasks."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1.0):
                await self.device.stop_advertising()
        await self.drop()
