"""Reading the broker's packets in batches: the import path's fix for one packet per event-loop turn.

aiomqtt lets paho read one MQTT packet per readable event (paho's `loop_read` reads a single packet
when nothing is in flight, with three or four `recv` calls for it), then hands each message over
through an `asyncio.Queue` and a new task per `async for` step. At 1,000 samples/s on a loaded host
that cost more than an importing gateway got of the CPU, and its socket backlog grew until the
broker dropped QoS 0 samples and command replies waited behind the backlog (docs/mqtt.md, "Import
throughput"). Here paho's `recv` is served from one 64 KiB read, every whole packet in it is handled
in the same callback, and messages go straight to the bridge's dispatcher, with no queue or task.

Writing: aiomqtt registers paho's writer through `call_soon_threadsafe`, so a writer registered for a
publish that was already written out (the bridge writes at once, see `MqttBridge.publish_now`) would
be added after paho had unregistered it and then spin on an always-writable socket. Once connected,
everything runs on the event loop, so the writer is added and removed synchronously here.

Samples read in one batch are coalesced per topic (latest value wins, as the bus does for a slow
subscriber); requests, replies and availability are dispatched in order, at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import aiomqtt
import paho.mqtt.client as mqtt

log = logging.getLogger(__name__)

#: Bytes asked of the socket at once.
READ_SIZE = 65536
#: Packets handled in one callback before the event loop gets a turn (the rest right after).
MAX_PACKETS_PER_TURN = 512

#: What the bridge is handed per message: topic, payload and MQTT 5 properties.
OnMessage = Callable[[mqtt.MQTTMessage], None]


class _BufferedRecv:
    """paho's `_sock_recv` served from one large read, so a packet costs no syscall of its own."""

    def __init__(self, recv: Callable[[int], bytes]) -> None:
        self._recv = recv
        self._data = b""
        self._offset = 0

    @property
    def buffered(self) -> int:
        """Bytes read from the socket and not yet taken by paho."""
        return len(self._data) - self._offset

    def __call__(self, bufsize: int) -> bytes:
        if self._offset >= len(self._data):
            chunk = self._recv(READ_SIZE)  # raises BlockingIOError when the socket is drained; b"" at EOF
            if not chunk:
                return chunk
            self._data, self._offset = chunk, 0
        start = self._offset
        self._offset = min(len(self._data), start + bufsize)
        return self._data[start : self._offset]


class BatchReader:
    """Takes over reading from a connected aiomqtt client; `install` once the client has connected."""

    def __init__(self, client: aiomqtt.Client, on_message: OnMessage, on_batch_end: Callable[[], None]) -> None:
        self._client = client
        self._paho: mqtt.Client = client._client  # aiomqtt exposes no reading hook of its own
        self._on_message = on_message
        self._on_batch_end = on_batch_end
        self._recv = _BufferedRecv(self._paho._sock_recv)
        self._fd = -1
        self._scheduled = False
        self.batches = 0

    def install(self) -> None:
        """Replace aiomqtt's reader and message queue with this batch reader (on the event loop)."""
        sock = self._paho.socket()
        if sock is None:
            raise aiomqtt.MqttError("not connected to the MQTT broker")
        loop = asyncio.get_running_loop()
        self._fd = sock.fileno()
        self._paho._sock_recv = self._recv  # type: ignore[method-assign]
        self._paho.on_message = self._message
        self._paho.on_socket_register_write = self._register_write
        loop.remove_reader(self._fd)
        loop.add_reader(self._fd, self._readable)
        if self._recv.buffered or _pending(sock):
            self._schedule()

    def _register_write(self, _client: mqtt.Client, _userdata: Any, sock: Any) -> None:
        asyncio.get_running_loop().add_writer(sock.fileno(), self._writable)

    def _writable(self) -> None:
        try:
            self._paho.loop_write()
        except Exception as error:
            self._fail(error)

    def _message(self, _client: mqtt.Client, _userdata: Any, message: mqtt.MQTTMessage) -> None:
        try:
            self._on_message(message)
        except Exception:  # one bad message never stops the reader
            log.exception("MQTT message on %s failed", message.topic)

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._readable)

    def _readable(self) -> None:
        self._scheduled = False
        paho = self._paho
        try:
            for _ in range(MAX_PACKETS_PER_TURN):
                paho.loop_read()
                sock = paho.socket()
                if sock is None or not (self._recv.buffered or _pending(sock)):
                    break
            else:
                self._schedule()  # more is buffered: go on after the loop's other callbacks
        except Exception as error:  # what aiomqtt's own reader does: the connection is broken
            self._fail(error)
        finally:
            self.batches += 1
            self._on_batch_end()

    def _fail(self, error: Exception) -> None:
        disconnected: asyncio.Future[None] = self._client._disconnected
        if not disconnected.done():
            disconnected.set_exception(error)


def _pending(sock: Any) -> int:
    """Decrypted TLS bytes waiting inside an SSL socket (epoll cannot see them)."""
    pending = getattr(sock, "pending", None)
    return int(pending()) if pending is not None else 0
