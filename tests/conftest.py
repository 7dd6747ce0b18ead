from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.harness import GatewayUnderTest, gateway_config, start_gateway
from tests.inprocess import start_in_process


def require_peer(executable: str) -> str:
    """Path of a real peer program; skip without it, or fail when HWGW_REQUIRE_PEERS=1."""
    path = shutil.which(executable)
    if path is None:
        message = f"real peer {executable!r} is not installed (make test installs it as root)"
        if os.environ.get("HWGW_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
async def gateway(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[GatewayUnderTest]:
    """The daemon with one simulated controller (`sim-1`, 50 Hz, 3 LEDs) on free ports.

    A process of its own, or the test's event loop for tests marked `in_process` (tests/inprocess.py).
    """
    config = gateway_config(tmp_path)
    in_process = request.node.get_closest_marker("in_process") is not None
    running = await (start_in_process(tmp_path, config) if in_process else start_gateway(tmp_path, config))
    yield running
    assert await running.stop() == 0
