from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.harness import RunningGateway, gateway_config, start_gateway


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
async def gateway(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    """The daemon with one simulated controller (`sim-1`, 50 Hz, 3 LEDs) on free ports."""
    running = await start_gateway(tmp_path, gateway_config(tmp_path))
    yield running
    assert await running.stop() == 0
