from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.harness import GatewayUnderTest, gateway_config, start_gateway
from tests.inprocess import start_in_process

#: The files that take longest under `make test` (a CI run's --durations=0, summed per file), longest
#: first, the browser-heavy ones apart: each file runs whole on one worker (--dist loadfile), so one
#: started last runs alone at the end. `make test` passes --no-loadscope-reorder, which otherwise
#: starts the files with the most tests first (test_dashboard_forms.py, 3 tests of 60 s, ran last).
SLOW_FILES_FIRST = (
    "test_dashboard_forms.py",
    "test_conformance.py",
    "test_aseba_compiler_differential.py",
    "test_replay_hostile.py",
    "test_abuse.py",
    "test_record.py",
    "test_shutdown_safety.py",
    "test_cli_client.py",
    "test_dashboard.py",
    "test_kortex_cyclic_process.py",
    "test_demo_listeners.py",
    "test_ha_discovery.py",
    "test_slow_client.py",
    "test_lifecycle.py",
    "test_rosbridge_clients.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run `SLOW_FILES_FIRST` first, in that order; every other file keeps its place after them."""
    rank = {name: index for index, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
