"""`hwgateway devices|sub|cmd|describe|estop` as processes against the real daemon, on WebSocket and msgpack."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from devices.sim.thymio import SimulatedThymio
from hwgateway.cli import EXIT_CODES, EXIT_CONNECTION, EXIT_NO_TOPICS, EXIT_USAGE, NO_TOPIC_GRACE_S, NOT_HELD
from hwgateway.client import ErrorCode
from tests.harness import SIM_DEVICE, Client, GatewayUnderTest, connect, free_port, gateway_config
from tests.inprocess import running_gateway, start_in_process
from tests.test_client import fixed_port_config, url_of

#: What `cmd` says on stderr when it does not hold: its leased outputs ended with it.
NOTE = NOT_HELD + "\n"

LATE_DEVICE = """
[devices.late]
kind = "sim"
connect_delay_s = 600.0
"""


async def hwgateway(*args: str, env: dict[str, str] | None = None, timeout: float = 20) -> tuple[int, str, str]:
    """Run `hwgateway ARGS` to its end; its status, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, **(env or {})},
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[GatewayUnderTest]:
    running = await start_in_process(tmp_path, gateway_config(tmp_path, SIM_DEVICE + LATE_DEVICE))
    yield running
    assert await running.stop() == 0


async def test_each_command_and_its_exit_status(rig: GatewayUnderTest) -> None:
    url = ["--url", url_of(rig, "ws")]
    status, out, _ = await hwgateway("devices", *url)
    assert status == 0
    assert out.splitlines()[0].split() == ["ID", "KIND", "STATUS", "DETAIL"]
    assert out.splitlines()[1].split()[:3] == ["sim-1", "sim", "connected"]
    status, out, _ = await hwgateway("devices", "--json", *url)
    assert [device["id"] for device in json.loads(out)] == ["sim-1", "late"]

    assert await hwgateway("cmd", "sim-1", "led", '{"rgb": [1, 0, 0]}', *url) == (0, '{"outputs": "led"}\n', NOTE)
    status, _, err = await hwgateway("cmd", "sim-1", "led", '{"index": 7}', *url)
    assert (status, err.split(":")[:2]) == (EXIT_CODES[ErrorCode.INVALID_ARGUMENT], ["hwgateway", " invalid_argument"])
    assert (await hwgateway("cmd", "nope", "led", *url))[0] == EXIT_CODES[ErrorCode.UNKNOWN_DEVICE]
    assert (await hwgateway("cmd", "sim-1", "wiimote/TimedSwitch", *url))[0] == EXIT_CODES[ErrorCode.UNKNOWN_COMMAND]
    assert (await hwgateway("cmd", "late", "led", *url))[0] == EXIT_CODES[ErrorCode.UNAVAILABLE]
    assert (await hwgateway("cmd", "sim-1", "led", "{not json", *url))[0] == EXIT_USAGE

    status, out, _ = await hwgateway("describe", "led", *url)
    assert (status, json.loads(out)["kind"]) == (0, "command")
    assert (await hwgateway("describe", "no/Such", *url))[0] == EXIT_CODES[ErrorCode.INVALID_ARGUMENT]
    status, out, _ = await hwgateway("estop", *url)
    assert status == 0
    assert {line.split()[0] for line in out.splitlines()[1:]} == {"sim-1", "late"}


@pytest.mark.parametrize("transport", ["ws", "tcp"])
async def test_sub_prints_one_line_per_sample_and_cmd_answers(rig: GatewayUnderTest, transport: str) -> None:
    url = ["--url", url_of(rig, transport)]
    status, out, _ = await hwgateway("sub", "sim-1/state", "--rate", "20", "--count", "3", "--json", *url)
    assert status == 0
    samples = [json.loads(line) for line in out.splitlines()]
    assert [sample["topic"] for sample in samples] == ["sim-1/state"] * 3
    assert samples[0]["type"] == "creos_messages/ControllerState"
    assert len(samples[0]["data"]["axes"]) == 6
    assert samples[0]["seq"] < samples[1]["seq"] < samples[2]["seq"]
    status, out, _ = await hwgateway("sub", "sim-1/**", "--count", "2", *url)
    assert status == 0
    assert all(line.startswith("sim-1/") and " seq=" in line for line in out.splitlines())
    assert await hwgateway("cmd", "sim-1", "rumble", '{"low": 1}', *url) == (0, '{"outputs": "rumble"}\n', NOTE)
    assert (await hwgateway("cmd", "sim-1", "rumble", '{"low": 2}', *url))[0] == EXIT_CODES[ErrorCode.INVALID_ARGUMENT]


async def test_url_and_token_from_the_environment(tmp_path: Path) -> None:
    async with running_gateway(
        tmp_path, gateway_config(tmp_path, extra='[auth]\ntokens = ["s3cret-token-0123"]\n')
    ) as running:
        env = {"HWGW_URL": f"unix:{running.unix_socket}"}
        status, _, err = await hwgateway("devices", env=env)
        assert status == EXIT_CODES[ErrorCode.UNAUTHORIZED]
        assert "token" in err
        assert (await hwgateway("devices", env={**env, "HWGW_TOKEN": "wrong"}))[0] == EXIT_CODES[ErrorCode.UNAUTHORIZED]
        status, out, _ = await hwgateway("devices", "--json", env={**env, "HWGW_TOKEN": "s3cret-token-0123"})
        assert [device["id"] for device in json.loads(out)] == ["sim-1"]
    status, _, err = await hwgateway("devices", "--url", f"tcp://127.0.0.1:{free_port()}")
    assert status == EXIT_CONNECTION
    assert "cannot connect" in err
    assert (await hwgateway("devices", "--url", "ftp://x"))[0] == EXIT_USAGE


@pytest.mark.parametrize("transport", ["ws", "unix"])
async def test_sub_goes_on_after_the_gateway_restarts(tmp_path: Path, transport: str) -> None:
    config = fixed_port_config(tmp_path, free_port(), free_port())
    running = await start_in_process(tmp_path, config)
    sub = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "sub", "sim-1/state", "--json", "--rate", "10",
        "--url", url_of(running, transport), stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert sub.stdout is not None
    try:
        first = json.loads(await asyncio.wait_for(sub.stdout.readline(), 10))
        assert first["topic"] == "sim-1/state"
        assert await running.stop() == 0
        restarted = time.time()
        running = await start_in_process(tmp_path, config)
        async with asyncio.timeout(10):
            while json.loads(await sub.stdout.readline())["recv_stamp"] < restarted:
                pass
        sub.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(sub.wait(), 5) == 0
    finally:
        if sub.returncode is None:
            sub.kill()
            await sub.wait()
        assert await running.stop() == 0


async def _rumble_low(watcher: Client, value: float, timeout: float = 10.0) -> None:
    """Wait until sim-1/outputs says rumble_low is `value`."""
    await watcher.wait_for(
        lambda m: m.get("topic") == "sim-1/outputs" and m["data"]["rumble_low"] == value, timeout=timeout
    )


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )


async def test_cmd_says_a_leased_output_ended_with_it_and_hold_keeps_it_until_the_end(rig: GatewayUnderTest) -> None:
    url = ["--url", url_of(rig, "ws")]
    watcher = await connect(rig, "ws")
    await watcher.ok("subscribe", topics=["sim-1/outputs"])
    rumble = '{"low": 1, "duration_s": 60}'
    # Not held: the rumble ends when the command exits, and the command says so.
    status, out, err = await hwgateway("cmd", "sim-1", "rumble", rumble, *url)
    assert (status, out, err) == (0, '{"outputs": "rumble"}\n', NOTE)
    assert "ended when it exited" in err
    assert "--hold" in err
    await _rumble_low(watcher, 0.0)
    # Held for 2 s: on while the command runs, released when it exits by itself.
    held = await _spawn("cmd", "sim-1", "rumble", rumble, "--hold", "2", *url)
    try:
        assert held.stdout is not None
        assert held.stderr is not None
        assert json.loads(await asyncio.wait_for(held.stdout.readline(), 10)) == {"outputs": "rumble"}
        assert "holding the command's outputs for 2 s; released on exit" in (await held.stderr.readline()).decode()
        await _rumble_low(watcher, 1.0)
        await asyncio.sleep(1.0)
        assert held.returncode is None  # still holding
        watcher.pushed.clear()
        assert await asyncio.wait_for(held.wait(), 10) == 0
        assert (await held.stderr.read()).decode() == "hwgateway: released\n"
        await _rumble_low(watcher, 0.0)
    finally:
        if held.returncode is None:
            held.kill()
            await held.wait()
    # --hold without a value: until Ctrl-C.
    forever = await _spawn("cmd", "sim-1", "rumble", rumble, "--hold", *url)
    try:
        assert forever.stderr is not None
        assert "until Ctrl-C" in (await asyncio.wait_for(forever.stderr.readline(), 10)).decode()
        await _rumble_low(watcher, 1.0)
        forever.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(forever.wait(), 10) == 0
        await _rumble_low(watcher, 0.0)
    finally:
        if forever.returncode is None:
            forever.kill()
            await forever.wait()
    status, _, err = await hwgateway("cmd", "sim-1", "rumble", "--hold", rumble, *url)
    assert status == EXIT_USAGE
    assert "give DATA before --hold" in err
    status, _, err = await hwgateway("cmd", "sim-1", "rumble", rumble, "--hold", "0", *url)
    assert status == EXIT_USAGE
    assert "positive number of seconds" in err
    await watcher.close()


async def test_hold_renews_a_lease_that_runs_out_in_time(tmp_path: Path) -> None:
    robot = SimulatedThymio(node_id=1)
    await robot.start()
    devices = f'[devices.thymio]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{robot.port}"\nmotor_lease_ms = 300\n'
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices)) as running:
        await running.until_connected()
        motors = '{"left": 120, "right": -80}'
        held = await _spawn(
            "cmd", "thymio", "hwgateway/ThymioMotors", motors, "--hold", "2", "--url", url_of(running, "ws")
        )
        assert held.stderr is not None
        line = (await asyncio.wait_for(held.stderr.readline(), 10)).decode()
        assert "holding the command's outputs for 2 s, repeated every 0.15 s to renew its lease" in line
        for _ in range(10):  # well past the 0.3 s lease, the motors still turn
            await asyncio.sleep(0.1)
            assert (robot.get("motor.left.target"), robot.get("motor.right.target")) == (120, -80)
        assert await asyncio.wait_for(held.wait(), 10) == 0
        async with asyncio.timeout(5):
            while robot.get("motor.left.target") != 0:  # noqa: ASYNC110 (the robot is polled)
                await asyncio.sleep(0.02)
        await robot.stop()


async def test_sub_says_when_no_topic_matches_and_exits_unless_asked_to_wait(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path)) as running:
        await running.until_connected()
        url = ["--url", url_of(running, "ws")]
        status, out, err = await hwgateway("sub", "nosuch/**", *url)  # every device is up: at once
        assert (status, out) == (EXIT_NO_TOPICS, "")
        assert err.startswith("hwgateway: no topic matches nosuch/**")
        assert "--wait" in err
        assert (await hwgateway("sub", "nosuch/**", "sim-1/state", "--count", "1", *url))[0] == 0  # one matches
        waiting = await _spawn("sub", "nosuch/**", "--wait", *url)
        try:
            await asyncio.sleep(NO_TOPIC_GRACE_S / 2)
            assert waiting.returncode is None
            waiting.send_signal(signal.SIGINT)
            assert await asyncio.wait_for(waiting.wait(), 10) == 0
        finally:
            if waiting.returncode is None:
                waiting.kill()
                await waiting.wait()


async def test_sub_gives_a_connecting_device_time_to_publish(rig: GatewayUnderTest) -> None:
    # `late` is still connecting: its topics may yet come, so sub waits a while before it gives up.
    status, _, err = await hwgateway("sub", "late/**", "--url", url_of(rig, "ws"))
    assert status == EXIT_NO_TOPICS
    assert "no topic matches late/**" in err
