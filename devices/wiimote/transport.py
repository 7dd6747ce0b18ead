"""Report links to a remote: one whole report per read and per write (spec §1).

- hidraw: `/dev/hidrawN` opened non-blocking; reads and writes carry the report ID first. A read
  error EIO/ENODEV (or EPOLLHUP) means the remote went away.
- L2CAP: the HID control (PSM 0x11) and interrupt (PSM 0x13) channels; input arrives on the
  interrupt channel as `A1 <report>`, output goes there as `A2 <report>` (this works for
  RVL-CNT-01-TR remotes, which ignore SET_REPORT on the control channel).
- a SOCK_SEQPACKET socket (the simulated remote): like hidraw.

The link holds no protocol logic; it hands whole reports to `on_report` and calls `on_lost` once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
from collections.abc import Callable

log = logging.getLogger(__name__)

#: Larger than any report (22 bytes with the L2CAP header), so one read never splits a report.
READ_SIZE = 64
PSM_CONTROL = 0x11
PSM_INTERRUPT = 0x13
L2CAP_INPUT = 0xA1
L2CAP_OUTPUT = 0xA2
_CONNECT_TRIES = 3


class LinkLost(ConnectionError):
    """The remote went away (hidraw EIO/ENODEV, hang-up, socket closed)."""


class BluetoothUnavailable(RuntimeError):
    """The running Python has no AF_BLUETOOTH sockets (built without Bluetooth headers, or not Linux)."""


class ReportLink:
    """Reads and writes whole reports on a non-blocking file descriptor with the event loop.

    `header_in` is stripped from every read (0xA1 on L2CAP) and `header_out` prepended to every
    write (0xA2). `keep` holds objects that own the descriptor (sockets), closed with the link.
    """

    def __init__(
        self,
        fd: int,
        on_report: Callable[[bytes], None],
        on_lost: Callable[[Exception], None],
        *,
        header_in: bytes = b"",
        header_out: bytes = b"",
        close_fd: bool = True,
        keep: tuple[socket.socket, ...] = (),
    ) -> None:
        self.fd = fd
        self._on_report = on_report
        self._on_lost = on_lost
        self._header_in = header_in
        self._header_out = header_out
        self._close_fd = close_fd
        self._keep = keep
        self._loop = asyncio.get_running_loop()
        self._closed = False
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        while not self._closed:
            try:
                data = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                return
            except OSError as error:
                self._lose(LinkLost(f"read failed: {error.strerror or error}"))
                return
            if not data:
                self._lose(LinkLost("the remote closed the link"))
                return
            if self._header_in:
                if not data.startswith(self._header_in):
                    log.debug("dropping a frame without the %s header", self._header_in.hex())
                    continue
                data = data[len(self._header_in) :]
            self._on_report(data)

    def write(self, report: bytes) -> None:
        """Write one report; a full buffer drops it (the next status poll repairs state), a dead link is lost."""
        if self._closed:
            return
        try:
            os.write(self.fd, self._header_out + report)
        except BlockingIOError:
            log.warning("output report %#04x dropped: the link is not writable", report[0])
        except OSError as error:
            if error.errno in (errno.EIO, errno.ENODEV, errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self._lose(LinkLost(f"write failed: {error.strerror or error}"))
            else:
                raise

    def _lose(self, error: Exception) -> None:
        if self._closed:
            return
        self.close()
        self._on_lost(error)

    def close(self) -> None:
        """Stop reading and release the descriptor."""
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self.fd)
        for sock in self._keep:
            sock.close()
        if self._close_fd and not self._keep:
            with contextlib.suppress(OSError):
                os.close(self.fd)


def open_hidraw(path: str, on_report: Callable[[bytes], None], on_lost: Callable[[Exception], None]) -> ReportLink:
    """Open a hidraw node; `PermissionError` names the udev fix."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except PermissionError:
        raise PermissionError(
            f"no access to {path}: add a udev rule such as "
            'KERNEL=="hidraw*", KERNELS=="*057E:0306*", MODE="0660", TAG+="uaccess" (and 0330)'
        ) from None
    return ReportLink(fd, on_report, on_lost)


def bluetooth_family() -> tuple[int, int]:
    """(AF_BLUETOOTH, BTPROTO_L2CAP), or `BluetoothUnavailable` when this Python lacks them."""
    family = getattr(socket, "AF_BLUETOOTH", None)
    proto = getattr(socket, "BTPROTO_L2CAP", None)
    if family is None or proto is None:
        raise BluetoothUnavailable(
            "this Python was built without AF_BLUETOOTH (Bluetooth headers missing at build time): "
            'use transport = "hidraw" after pairing the remote with BlueZ, or a Python built with libbluetooth-dev'
        )
    return int(family), int(proto)


async def _connect_l2cap(address: str, psm: int, family: int, proto: int) -> socket.socket:
    loop = asyncio.get_running_loop()
    last: OSError | None = None
    for attempt in range(_CONNECT_TRIES):
        sock = socket.socket(family, socket.SOCK_SEQPACKET, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (address, psm))
        except OSError as error:
            sock.close()
            last = error
            # Dolphin retries each channel 3 times, 500 ms apart: a just-woken remote may refuse at first.
            if attempt + 1 < _CONNECT_TRIES:
                await asyncio.sleep(0.5)
            continue
        return sock
    raise LinkLost(f"L2CAP PSM {psm:#04x} to {address} failed: {last}")


async def open_l2cap(
    address: str, on_report: Callable[[bytes], None], on_lost: Callable[[Exception], None]
) -> ReportLink:
    """Connect control then interrupt channel to `address`; reports flow on the interrupt channel."""
    family, proto = bluetooth_family()
    control = await _connect_l2cap(address, PSM_CONTROL, family, proto)
    try:
        interrupt = await _connect_l2cap(address, PSM_INTERRUPT, family, proto)
    except BaseException:
        control.close()
        raise
    return ReportLink(
        interrupt.fileno(),
        on_report,
        on_lost,
        header_in=bytes((L2CAP_INPUT,)),
        header_out=bytes((L2CAP_OUTPUT,)),
        keep=(interrupt, control),
    )
