"""roslibpy (Twisted and asyncio transports) and roslib (Node, JSON / CBOR / fragments), unchanged, on the daemon.

The daemon runs through its CLI with the demo devices; each client program prints what it saw.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import GatewayUnderTest, connect, demo_config, devices_connected, metric
from tests.inprocess import running_gateway
from tests.rosbridge_rig import MOTOR_LEASE_MS, rosbridge_url

ROOT = Path(__file__).resolve().parent.parent
ROSLIB_DIR = ROOT / "tests" / "node" / "rosbridge"
CLIENT_TIMEOUT_S = 90.0


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[GatewayUnderTest]:
    async with running_gateway(tmp_path, demo_config(tmp_path, thymio_motor_lease_ms=MOTOR_LEASE_MS)) as running:
        await devices_connected(running, ("thymio-demo", "wiimote-demo", "sim-pad", "sim-lamp"))
        yield running


async def run_program(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    try:
        async with asyncio.timeout(CLIENT_TIMEOUT_S):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def roslibpy_result(code: int, out: str, err: str) -> dict[str, Any]:
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert code == 0, f"roslibpy client failed ({code}):\n{out}\n{err[-3000:]}"
    assert lines, f"roslibpy client failed ({code}):\n{out}\n{err[-3000:]}"
    result: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULT "))
    return result


def check_common(result: dict[str, Any], topics: list[str], services: list[str]) -> None:
    """What both libraries must have seen: rosapi, subscriptions, an LED command, services ok and failing."""
    assert {"/wiimote/state", "/thymio/node_1/events/state", "/thymio/led", "/sim_pad/state"} <= set(topics)
    assert {"/thymio/aseba/get_variable", "/thymio/aseba/set_variable", "/rosapi/topics"} <= set(services)


async def motor_target(gateway: GatewayUnderTest) -> list[int]:
    client = await connect(gateway, "ws")
    try:
        data = await client.ok(
            "command", device="thymio-demo", type="asebaros_msgs/GetVariable", data={"variable": "motor.left.target"}
        )
    finally:
        await client.close()
    return list(data["data"])


@pytest.mark.parametrize("transport", ["twisted", "asyncio"])
async def test_roslibpy_unchanged(demo: GatewayUnderTest, transport: str) -> None:
    code, out, err = await run_program(
        sys.executable, "tests/roslibpy_client.py", rosbridge_url(demo), env={"ROSLIBPY_TRANSPORT": transport}
    )
    result = roslibpy_result(code, out, err)
    assert result["connected"]
    check_common(result, result["topics"], result["services"])
    assert result["topic_type"] == "wiimote/State"
    assert result["typedefs"][0] == "wiimote/State"
    assert "std_msgs/Header" in result["typedefs"]
    assert result["time"][0] > 1.7e9
    # Counts in a client's fixed window: samples flow (how many a busy machine delivers is not a bound).
    assert result["wiimote_count"] >= 1
    assert "angular_velocity_zeroed" in result["wiimote_last"]
    assert result["thymio_count"] >= 1
    # Two subscriptions, one publish per message: each callback saw each sample once.
    assert result["twice_first"] >= 1
    assert result["twice_first"] == result["twice_first_unique"]
    assert result["twice_second"] >= 1
    assert result["twice_second"] == result["twice_second_unique"]
    # sim-lamp publishes 10 Hz: 500 ms throttling leaves about 4 in 2 s (a busy machine fewer, never
    # more; unthrottled, 20).
    assert result["unthrottled_count"] >= 1
    assert 1 <= result["throttled_count"] <= 6
    assert result["leds"]["ok"]
    assert result["leds"]["values"]["data"][:8] == [32] * 8
    assert not result["missing_variable"]["ok"]
    assert "nope" in result["missing_variable"]["error"]
    assert result["motors_running"]["values"]["data"] == [200]
    # The client closed with its motors running: its lease (60 s) ended with the connection.
    async with asyncio.timeout(5):
        while await motor_target(demo) != [0]:  # noqa: ASYNC110 (the robot is polled, nothing to wait on)
            await asyncio.sleep(0.05)


def node() -> str:
    path = shutil.which("node")
    if path is None or not (ROSLIB_DIR / "node_modules" / "roslib").is_dir():
        message = "node and tests/node/rosbridge/node_modules are needed (make test runs npm ci)"
        if os.environ.get("HWGW_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.mark.parametrize("library", ["roslib", "roslib-1"])  # npm's roslib 2.1.0 and 1.4.1
async def test_roslib_unchanged_with_json_cbor_and_fragments(demo: GatewayUnderTest, library: str) -> None:
    node_path = node()
    cbor_before = await metric(demo, "hwgw_frames_encoded_total", 'encoding="rosbridge.cbor"')
    # roslib 1.x has no code for fragments (it never asks for them): its run has no fragment mode.
    modes = ("none", "cbor", "fragment") if library == "roslib" else ("none", "cbor")
    runs = await asyncio.gather(
        *(
            run_program(node_path, str(ROSLIB_DIR / "roslib_client.mjs"), rosbridge_url(demo), mode, library)
            for mode in modes
        )
    )
    for code, out, err in runs:
        assert code == 0, f"roslib client failed:\n{out}\n{err}"
        result = json.loads(out.strip().splitlines()[-1])
        check_common(result, result["topics"], result["services"])
        assert result["topicType"] == "wiimote/State"
        assert result["typedefTypes"][0] == "wiimote/State"
        assert "angular_velocity_zeroed" in result["decoded"]
        assert result["wiimoteCount"] >= 1  # counts in a fixed window: samples flow
        assert len(result["wiimoteLast"]["buttons"]) == 11
        assert result["thymioCount"] >= 1
        assert result["thymioLast"]["source"] == 1
        # sim-pad publishes 100 Hz: 200 ms throttling leaves about 10 in 2 s (a busy machine fewer,
        # never more; unthrottled it would be 200).
        assert 1 <= result["throttledCount"] <= 14, result["throttledCount"]
        assert result["leds"]["ok"]
        assert result["leds"]["values"]["data"][:8] == [32] * 8
        assert not result["missingVariable"]["ok"]
        assert "nope" in result["missingVariable"]["error"]
        status = result["unknownStatus"]
        assert status["level"] == "error"
        assert "unknown topic /no/such/topic" in status["msg"]
        assert status["id"].startswith("subscribe:/no/such/topic:")
    # The CBOR run got binary frames, the fragment run fragments of at most 64 characters.
    assert await metric(demo, "hwgw_frames_encoded_total", 'encoding="rosbridge.cbor"') > cbor_before
    if "fragment" in modes:
        assert await metric(demo, "hwgw_frames_encoded_total", 'encoding="rosbridge.fragments.64"') > 0
