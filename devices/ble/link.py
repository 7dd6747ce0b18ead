"""The one bleak connection helper every BLE adapter uses: find, connect, discover, notify, write, lose.

`find_device` scans (by address, name or name prefix, service UUID, manufacturer id) until a match or
a timeout. `BleLink.open` connects (retrying `attempts` times with doubling delays; after that the
supervisor's own backoff takes over), records the services present, and watches for the peripheral
going away (`lost`). Errors come out as `BleError` subclasses whose messages say what to do: no
Bluetooth adapter, BlueZ not running, the device needs pairing, an ATT error code. Only bleak's public
API is used; `Backend` picks BlueZ (the platform default) or the virtual radio.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bleak import BleakClient, BleakScanner
from bleak.backends.client import BaseBleakClient
from bleak.backends.device import BLEDevice
from bleak.backends.scanner import AdvertisementData, BaseBleakScanner
from bleak.exc import BleakBluetoothNotAvailableError, BleakDBusError, BleakError

log = logging.getLogger(__name__)

#: ATT error codes that mean "pair (bond) with the device first" (Core Vol 3 Part F 3.4.1.1).
PAIRING_ATT_CODES = {
    0x05: "insufficient authentication",
    0x08: "insufficient authorization",
    0x0F: "insufficient encryption",
}
#: Longest wait for a disconnect we asked for (s).
CLOSE_TIMEOUT_S = 2.0
#: Longest wait for one write on the way to a safe state (s).
SAFE_STATE_WRITE_TIMEOUT_S = 1.0
_ATT_IN_TEXT = re.compile(r"ATT error:? 0x([0-9a-fA-F]{2})")


class BleError(ConnectionError):
    """A Bluetooth LE failure, with a message that names the cause."""


class BleUnavailable(BleError):
    """No usable Bluetooth: no adapter, adapter off, or BlueZ / D-Bus not running."""


class BleNotFound(BleError):
    """No advertising device matched within the scan timeout."""


class BlePairingRequired(BleError):
    """The device refused an operation until it is paired (bonded)."""


class BleAttError(BleError):
    """The device answered an operation with an ATT error; `code` is the ATT error code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class BleLost(BleError):
    """The peripheral disconnected."""


@dataclass(frozen=True, slots=True)
class Backend:
    """Which bleak backends to use: None = the platform's (BlueZ on Linux); `kwargs` go to both."""

    client: type[BaseBleakClient] | None = None
    scanner: type[BaseBleakScanner] | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def virtual(cls, radio: Any = None) -> Backend:
        """The virtual radio (`devices.ble.virtual_radio`); `radio` None is the loop's shared one."""
        from devices.ble.bumble_backend import BumbleClient, BumbleScanner

        return cls(BumbleClient, BumbleScanner, {"radio": radio} if radio is not None else {})

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `BleakClient`."""
        return {**self.kwargs, "backend": self.client} if self.client is not None else dict(self.kwargs)

    def scanner_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `BleakScanner`."""
        return {**self.kwargs, "backend": self.scanner} if self.scanner is not None else dict(self.kwargs)


@dataclass(frozen=True, slots=True)
class Selector:
    """Which advertising device to take; every field that is set must match (empty: any)."""

    address: str = ""
    name: str = ""
    name_prefix: str = ""
    service_uuid: str = ""
    manufacturer_id: int | None = None
    accept: Callable[[BLEDevice, AdvertisementData], bool] | None = None
    #: What `accept` looks for, in words (for messages).
    accepts: str = ""

    def matches(self, device: BLEDevice, data: AdvertisementData) -> bool:
        """True when `device` advertising `data` is the one sought."""
        name = data.local_name or device.name or ""
        return (
            (not self.address or device.address.upper() == self.address.upper())
            and (not self.name or name == self.name)
            and (not self.name_prefix or name.startswith(self.name_prefix))
            and (not self.service_uuid or self.service_uuid.lower() in [u.lower() for u in data.service_uuids])
            and (self.manufacturer_id is None or self.manufacturer_id in data.manufacturer_data)
            and (self.accept is None or self.accept(device, data))
        )

    def describe(self) -> str:
        """The selector in words, for messages."""
        parts = [
            f"address {self.address}" if self.address else "",
            f"name {self.name!r}" if self.name else "",
            f"name starting {self.name_prefix!r}" if self.name_prefix else "",
            f"service {self.service_uuid}" if self.service_uuid else "",
            self.accepts,
        ]
        return ", ".join(part for part in parts if part) or "any device"


def explain(error: BaseException) -> BleError:
    """Turn a bleak (or OS) error into a `BleError` that says what is wrong and what to do."""
    if isinstance(error, BleError):
        return error
    if isinstance(error, BleakBluetoothNotAvailableError):
        said = str(error.args[0]) if error.args else str(error)  # bleak's args carry the reason's repr too
        return BleUnavailable(
            f"no usable Bluetooth adapter ({error.reason.name.lower()}): {said} "
            "(plug one in, or `bluetoothctl power on`, `rfkill unblock bluetooth`)"
        )
    text = str(error)
    if isinstance(error, BleakDBusError):
        name = error.dbus_error
        if name in ("org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"):
            return BleUnavailable("BlueZ is not running (start bluetoothd, e.g. systemctl start bluetooth)")
        if (
            name
            in (
                "org.bluez.Error.AuthenticationFailed",
                "org.bluez.Error.AuthenticationRejected",
                "org.bluez.Error.NotPermitted",
            )
            and "pair" in text.lower()
        ):
            return BlePairingRequired(
                f"the device needs pairing ({text}): pair it with `hwgateway pair --ble ADDRESS`, "
                "or flash it with 'No pairing required'"
            )
    if isinstance(error, FileNotFoundError | ConnectionRefusedError) or (
        "org.freedesktop.DBus" in text and "not" in text.lower()
    ):
        return BleUnavailable(
            f"no D-Bus system bus or BlueZ here ({text or type(error).__name__}): is bluetoothd running?"
        )
    if "No Bluetooth adapters found" in text or "No powered Bluetooth adapters" in text:
        return BleUnavailable(f"no usable Bluetooth adapter: {text}")
    code = getattr(error, "code", None)
    if not isinstance(code, int):
        match = _ATT_IN_TEXT.search(text)
        code = int(match.group(1), 16) if match else None
    if code is not None:
        if code in PAIRING_ATT_CODES:
            return BlePairingRequired(
                f"the device needs pairing (ATT {PAIRING_ATT_CODES[code]}, 0x{code:02x}): pair it with "
                "`hwgateway pair --ble ADDRESS`, or flash it with 'No pairing required'"
            )
        return BleAttError(f"the device answered with ATT error 0x{code:02x} ({text})", code)
    return BleError(f"{type(error).__name__}: {text}" if text else type(error).__name__)


async def find_device(selector: Selector, timeout_s: float, backend: Backend) -> tuple[BLEDevice, AdvertisementData]:
    """Scan until a device matches `selector`; raise `BleNotFound` after `timeout_s` seconds."""
    loop = asyncio.get_running_loop()
    found: asyncio.Future[tuple[BLEDevice, AdvertisementData]] = loop.create_future()

    def seen(device: BLEDevice, data: AdvertisementData) -> None:
        if not found.done() and selector.matches(device, data):
            found.set_result((device, data))

    uuids = [selector.service_uuid] if selector.service_uuid else None
    try:
        async with BleakScanner(seen, uuids, **backend.scanner_kwargs()):
            async with asyncio.timeout(timeout_s):
                return await found
    except TimeoutError:
        raise BleNotFound(f"no device advertising with {selector.describe()} within {timeout_s:g} s") from None
    except (BleakError, OSError) as error:
        raise explain(error) from None


class LinkSettings(Protocol):
    """The connection keys every BLE device kind's options share (see `options.SHARED_KEYS_DOC`)."""

    @property
    def scan_timeout_s(self) -> float: ...
    @property
    def connect_timeout_s(self) -> float: ...
    @property
    def connect_attempts(self) -> int: ...
    @property
    def retry_delay_s(self) -> float: ...
    @property
    def pair(self) -> bool: ...


class BleLink:
    """One connected peripheral: its services, reads, writes, notifications, and the `lost` future."""

    def __init__(
        self,
        client: BleakClient,
        device: BLEDevice,
        advertisement: AdvertisementData | None,
        lost: asyncio.Future[None],
    ) -> None:
        self.client = client
        self.device = device
        self.advertisement = advertisement
        #: Fails with `BleLost` when the peripheral disconnects (or the link drops).
        self.lost = lost
        self.services = {service.uuid.lower() for service in client.services}
        self.characteristics = {char.uuid.lower() for service in client.services for char in service.characteristics}

    @classmethod
    async def open_with(cls, selector: Selector, backend: Backend, settings: LinkSettings) -> BleLink:
        """`open` with the connection keys of a device's options."""
        return await cls.open(
            selector,
            backend,
            scan_timeout_s=settings.scan_timeout_s,
            connect_timeout_s=settings.connect_timeout_s,
            attempts=settings.connect_attempts,
            retry_delay_s=settings.retry_delay_s,
            pair=settings.pair,
        )

    @classmethod
    async def open(
        cls,
        selector: Selector,
        backend: Backend,
        *,
        scan_timeout_s: float = 10.0,
        connect_timeout_s: float = 10.0,
        attempts: int = 3,
        retry_delay_s: float = 0.5,
        pair: bool = False,
    ) -> BleLink:
        """Find the device, connect and discover; retry a failed connect `attempts` times, delays doubling."""
        device, advertisement = await find_device(selector, scan_timeout_s, backend)
        delay = retry_delay_s
        link: BleLink | None = None
        for attempt in range(1, attempts + 1):
            lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def disconnected(_: BleakClient, lost: asyncio.Future[None] = lost) -> None:
                if not lost.done():
                    lost.set_exception(BleLost(f"{device.address} disconnected"))

            client = BleakClient(device, disconnected, timeout=connect_timeout_s, pair=pair, **backend.client_kwargs())
            try:
                await client.connect()
            except (BleakError, OSError, TimeoutError) as error:
                reason = explain(error)
                if attempt == attempts or isinstance(reason, BleUnavailable | BlePairingRequired):
                    raise reason from None
                log.info(
                    "connecting to %s failed (%s); attempt %d of %d in %.2f s",
                    device.address,
                    reason,
                    attempt + 1,
                    attempts,
                    delay,
                )
                await asyncio.sleep(delay)
                delay *= 2
                continue
            link = cls(client, device, advertisement, lost)
            break
        assert link is not None
        return link

    async def until_lost(self) -> None:
        """Wait until the peripheral goes (raise `BleLost`), or until the caller's task is cancelled."""
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # A cancellation arrived while a library awaited (Bumble's requests use asyncio.wait_for,
            # which in Python 3.11 can swallow it): honour it instead of waiting for ever.
            raise asyncio.CancelledError
        await self.lost

    @property
    def address(self) -> str:
        """The peripheral's Bluetooth address."""
        return self.device.address

    @property
    def mtu(self) -> int:
        """The ATT MTU in use (bytes)."""
        return self.client.mtu_size

    def has(self, characteristic_uuid: str) -> bool:
        """True when the peripheral serves the characteristic."""
        return characteristic_uuid.lower() in self.characteristics

    async def read(self, characteristic_uuid: str) -> bytes:
        """Read a characteristic."""
        try:
            return bytes(await self.client.read_gatt_char(characteristic_uuid))
        except (BleakError, OSError) as error:
            raise explain(error) from None

    async def write(
        self, characteristic_uuid: str, data: bytes, response: bool = True, timeout_s: float | None = None
    ) -> None:
        """Write with response (the peer confirms or answers an ATT error) or without; `timeout_s` bounds it."""
        try:
            async with asyncio.timeout(timeout_s):
                await self.client.write_gatt_char(characteristic_uuid, data, response=response)
        except TimeoutError:
            raise BleError(f"write to {characteristic_uuid} not answered within {timeout_s:g} s") from None
        except (BleakError, OSError) as error:
            raise explain(error) from None

    async def subscribe(self, characteristic_uuid: str, callback: Callable[[bytes], None]) -> None:
        """Deliver each notification or indication of the characteristic to `callback`."""

        def deliver(_: Any, data: bytearray) -> None:
            callback(bytes(data))

        try:
            await self.client.start_notify(characteristic_uuid, deliver)
        except (BleakError, OSError) as error:
            raise explain(error) from None

    async def close(self) -> None:
        """Disconnect (no `lost` for a disconnect we asked for), waiting at most `CLOSE_TIMEOUT_S`."""
        with contextlib.suppress(BleakError, OSError, TimeoutError):
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await self.client.disconnect()
        if not self.lost.done():
            self.lost.cancel()
