"""Hypothesis budgets for the fuzz targets (seconds each in `make test`, longer in `make fuzz`); a capturing transport.

`make fuzz` sets HWGW_FUZZ_SCALE (default there: 50) to multiply every target's example count.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from devices.registry import KINDS
from gateway.bus import Bus
from gateway.commands import CommandRouter
from gateway.core.client import Hub
from gateway.core.config import DeviceConfig, ServerConfig, SupervisorConfig
from gateway.errors import ErrorCode
from gateway.supervisor import Supervisor
from gateway.wire import Encoding

#: The request bound of the fuzzed hub (bytes): small, so that oversized requests are among the examples.
FUZZ_MAX_REQUEST_BYTES = 4096


def fuzz_settings(examples: int) -> settings:
    """Settings of one fuzz target: `examples` runs in `make test`, times HWGW_FUZZ_SCALE in `make fuzz`."""
    scale = max(1, int(os.environ.get("HWGW_FUZZ_SCALE", "1")))
    return settings(
        max_examples=examples * scale, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
    )


def fuzz_hub(devices: Sequence[DeviceConfig] = ()) -> Hub:
    """A hub over a bus and a supervisor of `devices` (not started), for sessions fed without sockets."""
    bus = Bus()
    supervisor = Supervisor(bus, SupervisorConfig(), tuple(devices), KINDS)
    server = ServerConfig(max_request_bytes=FUZZ_MAX_REQUEST_BYTES)
    return Hub(bus, supervisor, CommandRouter(supervisor, lambda *_: None), server, ())


class Capture:
    """A face transport that keeps every frame a session sends, one by one."""

    def __init__(self, encoding: Encoding = "json") -> None:
        self.encoding: Encoding = encoding
        self.frames: list[bytes] = []
        #: The code and reason the session closed with, None while open.
        self.closed: tuple[ErrorCode, str] | None = None

    def room(self) -> int:
        return -1  # every frame through `send`, one by one (a write would join a batch's frames)

    def write(self, data: bytes) -> None:
        self.frames.append(data)

    def try_write(self, data: bytes) -> bool:
        return False  # likewise: a group's joined bytes would hold several frames

    async def send(self, frames: list[bytes]) -> None:
        self.frames.extend(frames)

    async def close(self, code: ErrorCode, reason: str) -> None:
        self.closed = (code, reason)

    def abort(self) -> None:
        pass


class LogRecords(logging.Handler):
    """The messages `logger` logs at `level` and above while this is in a `with` block."""

    def __init__(self, logger: str, level: int) -> None:
        super().__init__(level)
        self._logger = logging.getLogger(logger)
        self.messages: list[str] = []

    def __enter__(self) -> LogRecords:
        self._logger.addHandler(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._logger.removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


#: Scalars of any JSON type: integers well past 64 bits, NaN and the infinities among them.
SCALARS: st.SearchStrategy[Any] = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20)
)


def nested(scalars: st.SearchStrategy[Any] = SCALARS) -> st.SearchStrategy[Any]:
    """`scalars`, and lists and maps of them a few levels deep."""
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=10,
    )


def json_bytes(value: object) -> bytes:
    """`value` as Python's json writes it: integers past 64 bits, NaN and Infinity as they are (hostile JSON)."""
    return json.dumps(value).encode()
