"""Opening an Aseba link: Dashel-style targets, TCP, and USB serial with DTR asserted."""

from __future__ import annotations

import asyncio
import errno
from dataclasses import dataclass
from typing import Literal

import serial_asyncio_fast
from serial.tools import list_ports  # type: ignore[import-untyped]  # pyserial ships no stubs

#: USB vendor id of Mobsya / Thymio, and the product ids of the robot and of the wireless dongle.
THYMIO_VENDOR_ID = 0x0617
THYMIO_PRODUCT_IDS = (0x000A, 0x000C)
#: Dashel's serial default; a USB CDC device ignores it, but a real UART bridge would not.
SERIAL_BAUD = 115200


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed link target: `kind` "tcp" (`host`, `port`) or "serial" (`device`)."""

    kind: Literal["tcp", "serial"]
    host: str = ""
    port: int = 0
    device: str = ""

    def __str__(self) -> str:
        return f"tcp:{self.host};{self.port}" if self.kind == "tcp" else f"ser:device={self.device}"


def _fields(spec: str) -> tuple[list[str], dict[str, str]]:
    positional: list[str] = []
    named: dict[str, str] = {}
    for part in spec.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            named[key.strip()] = value.strip()
        else:
            positional.append(part.strip())
    return positional, named


def parse_target(text: str) -> Target:
    """Parse ``tcp:HOST;PORT``, ``tcp:host=H;port=P``, ``ser:device=PATH``, ``ser:PATH`` or a path.

    Raise `ValueError` naming what is wrong.
    """
    scheme, sep, rest = text.partition(":")
    if not sep or scheme not in ("tcp", "ser"):
        if text.startswith("/"):
            return Target("serial", device=text)
        raise ValueError(
            f"target {text!r}: expected a Dashel target: tcp:HOST;PORT, ser:device=PATH, ser:PATH or a device path"
        )
    positional, named = _fields(rest)
    if scheme == "ser":
        device = named.get("device") or (positional[0] if positional else "")
        if not device:
            raise ValueError(f"target {text!r}: no serial device")
        return Target("serial", device=device)
    host = named.get("host") or (positional[0] if positional else "")
    port_text = named.get("port") or (positional[1] if len(positional) > 1 else "33333")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"target {text!r}: port {port_text!r} is not a number") from None
    if not host or not 1 <= port <= 65535:
        raise ValueError(f"target {text!r}: needs a host and a port in 1..65535")
    return Target("tcp", host=host, port=port)


def discover_usb() -> Target:
    """The first Thymio II or Thymio wireless dongle on USB; `ConnectionError` when there is none."""
    for port in sorted(list_ports.comports(), key=lambda p: p.device):
        if port.vid == THYMIO_VENDOR_ID and port.pid in THYMIO_PRODUCT_IDS:
            return Target("serial", device=port.device)
    raise ConnectionError("no Thymio (USB 0617:000A) or Thymio dongle (0617:000C) is plugged in")


async def open_link(target: Target) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open the byte stream of `target`.

    On serial, DTR is asserted: without it the Thymio stays in its own behaviour mode and the
    dongle enters its radio configuration mode.
    """
    if target.kind == "tcp":
        return await asyncio.open_connection(target.host, target.port)
    reader, writer = await serial_asyncio_fast.open_serial_connection(
        url=target.device, baudrate=SERIAL_BAUD, rtscts=False, dsrdtr=False
    )
    port = getattr(writer.transport, "serial", None)
    if port is not None:
        try:
            port.dtr = True
        except OSError as error:
            # A pseudo-terminal (socat bridge, test setups) has no modem lines to assert.
            if error.errno not in (errno.ENOTTY, errno.EINVAL):
                raise
    return reader, writer
