"""SIGTERM of a real daemon process stops the Thymio a binding drives in Debian's asebaplayground.

`hwgateway run` runs in a process of its own with a binding from a simulated controller (its left
trigger, in [0, 1], drives both wheels; `deadman = "none"`) to the playground's Thymio. The test
watches `motor.left.target`/`motor.right.target` in the real Aseba VM through the daemon until the
binding drives, sends the process SIGTERM, and reads the targets back over a link of its own (the
playground serves one client per robot): 0, and the daemon exited cleanly with no binding whose
safe output went unconfirmed.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from devices.sim.aseba_playground import Playground
from tests.conftest import require_peer
from tests.harness import connect, free_port, gateway_config, start_gateway
from tests.test_bindings_e2e import WAIT_S, Observer

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]


def config(port: int) -> str:
    return f"""
[devices.pad]
kind = "sim"
rate_hz = 50.0

[devices.thymio]
kind = "aseba"
target = "tcp:127.0.0.1;{port}"
request_timeout_ms = 5000

[bindings.drive]
source = "pad"
target = "thymio"
mode = "tank"
deadman = "none"
rate_hz = 20.0
timeout_s = 0.4
inputs.left = "state.axes.left_trigger"
inputs.right = "state.axes.left_trigger"
outputs.left = {{ command = "hwgateway/ThymioMotors", field = "left", max = 300 }}
outputs.right = {{ command = "hwgateway/ThymioMotors", field = "right", max = 300 }}
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port()])
    await running.start()
    yield running
    await running.stop()


async def test_sigterm_of_the_daemon_process_stops_the_robot(playground: Playground, tmp_path: Path) -> None:
    robot = playground.robots[0]
    daemon = await start_gateway(tmp_path, gateway_config(tmp_path, config(robot.port)))
    observer: Observer | None = None
    try:
        client = await connect(daemon, "ws")
        await client.until_connected({"pad", "thymio", "drive"}, timeout=WAIT_S)
        observer = Observer(client)
        await observer.until_driving("the binding driving from the daemon")
        await client.close()
        observer.client = None
        assert await daemon.stop(signal.SIGTERM) == 0
        await observer.open_own_link(playground)
        assert await observer.targets() == (0, 0)
    finally:
        if daemon.proc.returncode is None:
            await daemon.stop(signal.SIGKILL)
        if observer is not None:
            await observer.close()
    safe = {line["device"]: line for line in daemon.logs if "safe_state" in line}
    assert (safe["drive"]["safe_state"], safe["thymio"]["safe_state"]) == ("ok", "ok"), safe
    # The shutdown's e-stop halted the binding: its log line shows no driving command as its outputs.
    assert safe["drive"]["outputs"] == {}, safe["drive"]
