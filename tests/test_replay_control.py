"""The replay device through the real daemon: recorded devices listed, seek, pause, resume, speed, bad input."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.harness import Client, WsClient, gateway_config, start_gateway
from tests.test_record import python_read


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two seconds of a 50 Hz sim device, recorded by the daemon's own [record]."""
    tmp = tmp_path_factory.mktemp("replay-control")
    folder = tmp / "rec"

    async def record() -> None:
        config = gateway_config(tmp, extra=f'[record]\nfolder = "{folder}"\nchunk_bytes = 4096\n')
        gateway = await start_gateway(tmp, config)
        await asyncio.sleep(2.0)
        assert await gateway.stop() == 0

    asyncio.run(record())
    (path,) = folder.glob("*.mcap")
    return path


async def _states(client: Client, seconds: float) -> list[dict[str, Any]]:
    """The state pushes kept while waiting for a result, then those that arrive within `seconds`, in order.

    The kept ones came first: after `ReplayResume` the sample at the seek position is due at once,
    and the replay may publish it before the command's answer is written (the client then gets it first).
    """
    states = [m for m in client.pushed if m["op"] == "state"]
    client.pushed.clear()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = await client.recv(left)
        except TimeoutError:
            break
        if message["op"] == "state":
            states.append(message)
    return states


async def _devices_once_connected(client: Client, device: str, timeout: float = 5.0) -> dict[str, Any]:
    """`list_devices` by id, once `device` is connected (the player adds it as it opens the file)."""
    async with asyncio.timeout(timeout):
        while True:
            devices = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
            if devices.get(device, {}).get("status") == "connected":
                return devices
            await asyncio.sleep(0.05)


async def test_seek_pause_resume_and_speed_through_a_websocket_client(tmp_path: Path, recording: Path) -> None:
    _, recorded, _ = python_read(recording)
    recorded = [m for m in recorded if m[0] == "sim-1/state"]
    first_ns = recorded[0][1]
    device = f'[devices.player]\nkind = "replay"\nfile = {json.dumps(str(recording))}\nprefix = "replay-"\n'
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=device))
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            devices = await _devices_once_connected(client, "replay-sim-1")
            assert set(devices) == {"player", "replay-sim-1"}, devices
            replayed = devices["replay-sim-1"]
            assert replayed["kind"] == "sim", replayed
            assert replayed["publishes"], replayed
            assert "led" in replayed["accepts"], replayed
            assert replayed["capabilities"]["replayed_by"] == "player"
            await client.ok("subscribe", topics=["replay-sim-1/**"])
            assert await _states(client, 0.5), "the replay plays at once"

            paused = await client.ok("command", device="player", type="hwgateway/ReplayPause", data={})
            assert paused["state"] == "paused", paused
            assert paused["applied"].startswith("paused at "), paused
            assert 0 < paused["position_s"] <= paused["duration_s"], paused
            await _states(client, 0.3)  # what was already on its way
            assert await _states(client, 0.7) == [], "nothing is published while paused"

            seek = await client.ok("command", device="player", type="hwgateway/ReplaySeek", data={"position_s": 0.5})
            assert (seek["state"], seek["position_s"], seek["applied"]) == ("paused", 0.5, "seek to 0.500 s"), seek
            resumed = await client.ok("command", device="player", type="hwgateway/ReplayResume", data={})
            assert resumed["state"] == "playing", resumed
            assert resumed["applied"] == "resumed at 0.500 s", resumed
            states = await _states(client, 0.4)
            expected = [json.loads(m[4]) for m in recorded if m[1] - first_ns >= 500_000_000]
            assert [s["data"] for s in states] == expected[: len(states)], "play goes on from the seek position"
            assert len(states) >= 5

            fast = await client.ok("command", device="player", type="hwgateway/ReplaySpeed", data={"speed": 10})
            assert fast["speed"] == 10.0, fast
            assert fast["applied"] == "speed 1 -> 10", fast
            finished = await client.wait_for(lambda m: m["op"] == "device" and m["detail"] == "replay finished", 5)
            assert finished["device"] == "player"
            done = await client.ok("command", device="player", type="hwgateway/ReplayPause", data={})
            assert done["state"] == "finished", done
            assert done["applied"] == "nothing: the replay is finished", done

            bad: dict[str, list[tuple[dict[str, Any], str, str]]] = {
                "hwgateway/ReplaySeek": [
                    ({"position_s": 1000}, "invalid_argument", "data.position_s: 1000 s is beyond the recording's end"),
                    ({"position_s": -1}, "invalid_argument", "data.position_s: -1.0 is below the minimum 0.0"),
                    ({"position_s": "x"}, "invalid_argument", "data.position_s: expected a number, got str"),
                    ({"where": 1}, "invalid_argument", "where"),
                ],
                "hwgateway/ReplaySpeed": [({"speed": 0}, "invalid_argument", "data.speed: 0.0 is below the minimum")],
                "led": [({"index": 0}, "unavailable", "device 'player' replays ")],
            }
            for type_, cases in bad.items():
                for data, code, text in cases:
                    error = await client.error("command", device="player", type=type_, data=data)
                    assert error["code"] == code, (type_, data, error)
                    assert text in error["message"], (type_, data, error)
            error = await client.error("command", device="replay-sim-1", type="led", data={"index": 0})
            assert error["code"] == "unavailable", error
            assert "is replayed from " in error["message"], error
            assert "by 'player'" in error["message"], error
    finally:
        assert await gateway.stop() == 0


async def test_a_replayed_device_takes_the_recorded_availability(tmp_path: Path) -> None:
    """A device that failed and came back while recorded fails and comes back again in the replay."""
    folder = tmp_path / "rec"
    flaky = '[devices.flaky]\nkind = "sim"\nrate_hz = 50.0\nfail_after_s = 0.5\n'
    recorder = await start_gateway(
        tmp_path, gateway_config(tmp_path, devices=flaky, extra=f'[record]\nfolder = "{folder}"\n')
    )
    await asyncio.sleep(2.0)
    assert await recorder.stop() == 0
    (path,) = folder.glob("*.mcap")
    _, messages, _ = python_read(path)
    recorded = [json.loads(m[4])["status"] for m in messages if m[0] == "_gateway/device"]
    assert "disconnected" in recorded, recorded

    player = f'[devices.player]\nkind = "replay"\nfile = {json.dumps(str(path))}\nprefix = "replay-"\n'
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=player))
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            seen: list[tuple[str, str]] = []

            def came_back() -> bool:
                statuses = [status for status, _ in seen]
                return "disconnected" in statuses and "connected" in statuses[statuses.index("disconnected") :]

            deadline = time.monotonic() + 5.0
            while not came_back():
                left = deadline - time.monotonic()
                assert left > 0, f"replay-flaky went {seen}, recorded {recorded}"
                with contextlib.suppress(TimeoutError):
                    client.pushed.append(await client.recv(left))
                seen += [(m["status"], m["detail"]) for m in client.pushed
                         if m["op"] == "device" and m["device"] == "replay-flaky"]  # fmt: skip
                client.pushed.clear()
            failed = next(detail for status, detail in seen if status == "disconnected")
            assert failed.startswith("recorded"), seen
    finally:
        assert await gateway.stop() == 0
