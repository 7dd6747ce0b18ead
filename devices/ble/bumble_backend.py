"""bleak backends over Bumble's virtual radio: `BleakClient(..., backend=BumbleClient, radio=r)`.

bleak documents `backend=` on `BleakClient` and `BleakScanner` for custom backends; these map its
`BaseBleakClient` and `BaseBleakScanner` onto a Bumble central (`devices.ble.virtual_radio`), so an
adapter written against bleak's public API runs unchanged against simulated peripherals. An ATT error
from the peer is raised as `AttError` (a `BleakError` with the ATT `code`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import uuid
from collections.abc import Callable
from typing import Any

from bleak.args import SizedBuffer
from bleak.backends.characteristic import BleakGATTCharacteristic
from bleak.backends.client import BaseBleakClient, NotifyCallback
from bleak.backends.descriptor import BleakGATTDescriptor
from bleak.backends.device import BLEDevice
from bleak.backends.scanner import AdvertisementData, AdvertisementDataCallback, BaseBleakScanner
from bleak.backends.service import BleakGATTService, BleakGATTServiceCollection
from bleak.exc import BleakError
from bumble import att, gatt, gatt_client
from bumble.core import BaseBumbleError
from bumble.device import Connection, Peer

from devices.ble.virtual_radio import VirtualRadio, shared_radio

log = logging.getLogger(__name__)

#: Longest wait for a disconnection to complete (s); shutdown must not hang on a half-open link.
DISCONNECT_TIMEOUT_S = 1.0
#: ATT MTU the central asks for (BlueZ asks for 517; Bumble's server answers with its own maximum).
REQUESTED_MTU = 247

_PROPERTY_NAMES = (
    (gatt.Characteristic.Properties.BROADCAST, "broadcast"),
    (gatt.Characteristic.Properties.READ, "read"),
    (gatt.Characteristic.Properties.WRITE_WITHOUT_RESPONSE, "write-without-response"),
    (gatt.Characteristic.Properties.WRITE, "write"),
    (gatt.Characteristic.Properties.NOTIFY, "notify"),
    (gatt.Characteristic.Properties.INDICATE, "indicate"),
    (gatt.Characteristic.Properties.AUTHENTICATED_SIGNED_WRITES, "authenticated-signed-writes"),
    (gatt.Characteristic.Properties.EXTENDED_PROPERTIES, "extended-properties"),
)


class AttError(BleakError):
    """The peer answered with an ATT error response; `code` is the ATT error code (e.g. 0x05)."""

    def __init__(self, code: int, name: str) -> None:
        super().__init__(f"ATT error 0x{code:02x} ({name})")
        self.code = code


def _uuid_text(value: Any) -> str:
    text = str(value.to_hex_str("-")) if hasattr(value, "to_hex_str") else str(value)
    if len(text) == 4:
        return f"0000{text.lower()}-0000-1000-8000-00805f9b34fb"
    return text.lower()


def _translate(error: Exception) -> Exception:
    if isinstance(error, att.ATT_Error):
        code = int(error.error_code)
        return AttError(code, att.ErrorCode(code).name if code in att.ErrorCode.__members__.values() else "unknown")
    return BleakError(f"{type(error).__name__}: {error}")


class BumbleClient(BaseBleakClient):
    """A bleak client backend on the virtual radio (`radio=`; default: the loop's shared radio)."""

    def __init__(
        self, address_or_ble_device: BLEDevice | str, *, radio: VirtualRadio | None = None, **kwargs: Any
    ) -> None:
        for ignored in ("services", "bluez", "winrt"):
            kwargs.pop(ignored, None)
        super().__init__(address_or_ble_device, **kwargs)
        self._radio = radio
        self._connection: Connection | None = None
        self._peer: Peer | None = None
        self._closing = False
        self._subscribers: dict[int, Callable[[bytes], None]] = {}
        self._name = address_or_ble_device.name or "" if isinstance(address_or_ble_device, BLEDevice) else ""

    @property
    def name(self) -> str:
        """The name the device advertised (empty when connected by address)."""
        return self._name

    @property
    def mtu_size(self) -> int:
        """The negotiated ATT MTU (23 before the exchange)."""
        return self._connection.att_mtu if self._connection is not None else 23

    @property
    def is_connected(self) -> bool:
        """True while the LE connection is up."""
        return self._connection is not None

    async def connect(self, pair: bool, **kwargs: Any) -> None:
        """Connect, exchange the MTU and discover every service, characteristic and descriptor."""
        if pair:
            log.warning("the virtual radio does not pair; connecting without pairing")
        radio = self._radio or shared_radio()
        timeout = kwargs.get("timeout", self._timeout)
        try:
            connection = await radio.connect(self.address, timeout)
        except (BaseBumbleError, TimeoutError) as error:
            raise BleakError(f"could not connect to {self.address}: {error or type(error).__name__}") from None
        self._connection, self._closing = connection, False
        connection.on(connection.EVENT_DISCONNECTION, self._on_disconnection)
        peer = self._peer = Peer(connection)
        try:
            async with asyncio.timeout(timeout):
                await peer.request_mtu(REQUESTED_MTU)
                self.services = await self._discover(peer)
        except BaseException:
            await self.disconnect()
            raise

    async def _discover(self, peer: Peer) -> BleakGATTServiceCollection:
        collection = BleakGATTServiceCollection()
        await peer.discover_services()
        for service in peer.services:
            bleak_service = BleakGATTService(service, service.handle, _uuid_text(service.uuid))
            collection.add_service(bleak_service)
            await service.discover_characteristics()
            for characteristic in service.characteristics:
                properties = [name for flag, name in _PROPERTY_NAMES if characteristic.properties & flag]
                bleak_char = BleakGATTCharacteristic(
                    characteristic,
                    characteristic.handle,
                    _uuid_text(characteristic.uuid),
                    properties,  # type: ignore[arg-type]
                    lambda: self.mtu_size - 3,
                    bleak_service,
                )
                collection.add_characteristic(bleak_char)
                await characteristic.discover_descriptors()
                for descriptor in characteristic.descriptors:
                    collection.add_descriptor(
                        BleakGATTDescriptor(descriptor, descriptor.handle, _uuid_text(descriptor.type), bleak_char)
                    )
        return collection

    def _on_disconnection(self, reason: int) -> None:
        self._connection = self._peer = None
        self._subscribers.clear()
        if not self._closing and self._disconnected_callback is not None:
            self._disconnected_callback()

    async def disconnect(self) -> None:
        """Close the connection (no disconnected callback for a disconnect we asked for)."""
        connection = self._connection
        if connection is None:
            return
        self._closing = True
        with contextlib.suppress(BaseBumbleError, TimeoutError):
            async with asyncio.timeout(DISCONNECT_TIMEOUT_S):
                await connection.disconnect()
        self._connection = self._peer = None

    async def pair(self, *args: Any, **kwargs: Any) -> None:
        """The virtual radio has no pairing."""
        raise BleakError("the virtual radio does not pair")

    async def unpair(self) -> None:
        """The virtual radio has no pairing."""
        raise BleakError("the virtual radio does not pair")

    def _require(self) -> None:
        if self._connection is None:
            raise BleakError("not connected")

    async def read_gatt_char(
        self, characteristic: BleakGATTCharacteristic, *, use_cached: bool = False, **kwargs: Any
    ) -> bytearray:
        """Read a characteristic's value from the peer."""
        self._require()
        remote: gatt_client.CharacteristicProxy[bytes] = characteristic.obj
        try:
            return bytearray(await remote.read_value())
        except (att.ATT_Error, BaseBumbleError) as error:
            raise _translate(error) from None

    async def read_gatt_descriptor(
        self, descriptor: BleakGATTDescriptor, *, use_cached: bool = False, **kwargs: Any
    ) -> bytearray:
        """Read a descriptor's value from the peer."""
        self._require()
        try:
            return bytearray(await descriptor.obj.read_value())
        except (att.ATT_Error, BaseBumbleError) as error:
            raise _translate(error) from None

    async def write_gatt_char(self, characteristic: BleakGATTCharacteristic, data: SizedBuffer, response: bool) -> None:
        """Write with (ATT Write Request) or without response (Write Command)."""
        self._require()
        remote: gatt_client.CharacteristicProxy[bytes] = characteristic.obj
        try:
            await remote.write_value(bytes(data), with_response=response)
        except (att.ATT_Error, BaseBumbleError) as error:
            raise _translate(error) from None

    async def write_gatt_descriptor(self, descriptor: BleakGATTDescriptor, data: SizedBuffer) -> None:
        """Write a descriptor."""
        self._require()
        try:
            await descriptor.obj.write_value(bytes(data), with_response=True)
        except (att.ATT_Error, BaseBumbleError) as error:
            raise _translate(error) from None

    async def start_notify(
        self, characteristic: BleakGATTCharacteristic, callback: NotifyCallback, **kwargs: Any
    ) -> None:
        """Subscribe (notifications preferred over indications, as bleak's backends do)."""
        self._require()
        remote: gatt_client.CharacteristicProxy[bytes] = characteristic.obj

        def deliver(value: bytes) -> None:
            callback(bytearray(value))

        try:
            await remote.subscribe(deliver, prefer_notify=True)
        except (att.ATT_Error, BaseBumbleError) as error:
            raise _translate(error) from None
        self._subscribers[characteristic.handle] = deliver

    async def stop_notify(self, characteristic: BleakGATTCharacteristic) -> None:
        """Unsubscribe."""
        self._require()
        deliver = self._subscribers.pop(characteristic.handle, None)
        if deliver is not None:
            remote: gatt_client.CharacteristicProxy[bytes] = characteristic.obj
            await remote.unsubscribe(deliver)


def parse_advertising(
    structures: list[tuple[int, bytes]],
) -> tuple[str | None, list[str], dict[int, bytes], dict[str, bytes], int | None]:
    """Name, service UUIDs, manufacturer data, service data and TX power from AD structures (Core Supp. A)."""
    name: str | None = None
    uuids: list[str] = []
    manufacturer: dict[int, bytes] = {}
    service_data: dict[str, bytes] = {}
    tx_power: int | None = None
    for ad_type, data in structures:
        if ad_type in (0x08, 0x09):
            name = data.decode("utf-8", "replace")
        elif ad_type in (0x02, 0x03):
            uuids += [
                f"0000{value:04x}-0000-1000-8000-00805f9b34fb"
                for (value,) in struct.iter_unpack("<H", data[: len(data) // 2 * 2])
            ]
        elif ad_type in (0x06, 0x07):
            uuids += [str(uuid.UUID(bytes=data[i : i + 16][::-1])) for i in range(0, len(data) - 15, 16)]
        elif ad_type == 0xFF and len(data) >= 2:
            manufacturer[data[0] | data[1] << 8] = bytes(data[2:])
        elif ad_type == 0x16 and len(data) >= 2:
            service_data[f"0000{data[0] | data[1] << 8:04x}-0000-1000-8000-00805f9b34fb"] = bytes(data[2:])
        elif ad_type == 0x0A and len(data) == 1:
            tx_power = struct.unpack("<b", data)[0]
    return name, uuids, manufacturer, service_data, tx_power


class BumbleScanner(BaseBleakScanner):
    """A bleak scanner backend on the virtual radio (`radio=`; default: the loop's shared radio)."""

    def __init__(
        self,
        detection_callback: AdvertisementDataCallback | None,
        service_uuids: list[str] | None,
        scanning_mode: str = "active",
        *,
        radio: VirtualRadio | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(detection_callback, service_uuids)
        self._radio = radio
        self._token: object | None = None
        self._merged: dict[str, list[tuple[int, bytes]]] = {}

    async def start(self) -> None:
        """Start receiving advertisements and scan responses."""
        self.seen_devices = {}
        self._merged = {}
        radio = self._radio or shared_radio()
        self._radio = radio
        self._token = await radio.start_scanning(self._on_advertisement)

    async def stop(self) -> None:
        """Stop scanning."""
        if self._token is not None and self._radio is not None:
            token, self._token = self._token, None
            await self._radio.stop_scanning(token)

    def _on_advertisement(self, advertisement: Any) -> None:
        address = str(advertisement.address).split("/")[0]
        structures = [(int(t), bytes(d)) for t, d in advertisement.data.ad_structures]
        # An advertisement and its scan response arrive apart; like BlueZ, report their union.
        merged = {t: d for t, d in self._merged.get(address, [])}
        merged.update(structures)
        self._merged[address] = list(merged.items())
        name, uuids, manufacturer, service_data, tx_power = parse_advertising(self._merged[address])
        if not self.is_allowed_uuid(uuids):
            return
        data = AdvertisementData(
            name, manufacturer, service_data, uuids, tx_power, int(advertisement.rssi), (advertisement,)
        )
        device = self.create_or_update_device(address, address, name, advertisement, data)
        self.call_detection_callbacks(device, data)
