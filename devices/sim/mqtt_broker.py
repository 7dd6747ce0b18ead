"""An MQTT 5 broker inside the gateway's process, so the demo's simulated Link 6 needs none installed.

It is mqttools' pure-Python asyncio broker (PyPI `mqttools`, MIT). Why that one: the Link 6 path
needs MQTT 5 (a request names its reply's topic in the Response Topic property), and of the
pure-Python brokers on PyPI only mqttools speaks MQTT 5; amqtt 0.12 and hbmqtt speak 3.1.1 only
(amqtt also pins websockets 15.0.1, which the gateway's own websockets range would have to follow).
mqttools' limits fit a loopback demo: QoS 0 only (our default `mqtt_qos`), no authentication. Real
arms and the tests use a real broker (the arm's, Debian's mosquitto).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

#: Start-up wait for the listening socket (s).
START_TIMEOUT_S = 5.0


class EmbeddedBroker:
    """`await start()`, then clients connect to `host`:`port` (MQTT 5, QoS 0); `await stop()`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._task: asyncio.Task[None] | None = None
        self._broker: Any = None

    async def start(self) -> None:
        """Listen (port 0 picks a free one, see `port`)."""
        try:
            import mqttools  # the demo's extra; only the simulated Link 6 needs it
        except ImportError as error:
            raise RuntimeError(
                f"the simulated Link 6 needs an MQTT broker: install hwgateway[demo] ({error}), "
                'or set mqtt_broker = "external" with a broker at host:mqtt_port'
            ) from None

        # mqttools logs every client at info level; the gateway's log is no place for that.
        logging.getLogger("mqttools").setLevel(logging.WARNING)
        broker: Any = mqttools.Broker((self.host, self.port))
        self._broker = broker
        for server in broker._servers:
            server.serve_client = _closing(server.serve_client)
        self._task = asyncio.create_task(broker.serve_forever(), name="embedded-mqtt-broker")
        async with asyncio.timeout(START_TIMEOUT_S):
            self.port = (await broker.getsockname())[1]

    async def stop(self) -> None:
        """Stop listening and drop every client."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _closing(serve_client: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]) -> Any:
    """Mqttools leaves a client's socket open when its connection ends (even when cancelled): close it."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await serve_client(reader, writer)
        finally:
            writer.close()

    return serve
