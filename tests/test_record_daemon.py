"""`[record]`: the daemon records its own bus: config errors, rotation by size and time, pruning, commands, metadata."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import websockets

from gateway.config import loads
from gateway.errors import ConfigError
from tests.harness import WsClient, gateway_config
from tests.inprocess import running_gateway
from tests.test_record import node_read, python_read

FAST_SIM = '[devices.sim-1]\nkind = "sim"\nrate_hz = 400.0\nleds = 3\n'


def test_record_config_errors_are_all_reported_at_once(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    text = (
        f'[record]\nfolder = "{not_a_folder}"\ntopics = ["a//b"]\nprefix = "a/b"\nmax_file_bytes = 100\n'
        "max_total_bytes = 5\nmax_file_s = 0.5\n"
    )
    with pytest.raises(ConfigError) as caught:
        loads(text)
    message = str(caught.value)
    for expected in (
        "record.folder: ",
        "exists and is not a folder",
        "record.topics[0]: pattern 'a//b'",
        "record.prefix: 'a/b' must be",
        "record.max_file_bytes: 0 (no limit) or at least 16384",
        "record.max_file_s: 0 (no limit) or at least 1 s",
    ):
        assert expected in message, message
    cases = {
        '[record]\nfolder = "x"\ncompression = "gzip"\n': "record.compression: expected one of 'zstd', 'lz4', 'none'",
        '[record]\nfolder = "x"\nmax_total_bytes = 100000\n': "record.max_total_bytes: needs rotation",
        '[record]\nfolder = "x"\nmax_file_bytes = 100000\nmax_total_bytes = 150000\n': "at least twice",
        '[record]\nfolder = "x"\nmax_file_bytes = 20000\n': "record.chunk_bytes: must be at most record.max_file_bytes",
        '[record]\nfolder = "x"\nqueue = 0\n': "record.queue: 0 is outside",
        '[record]\nfolder = "x"\ntopics = []\n': "record.topics: expected at least one pattern",
        "[record]\nfolder = 3\n": "record.folder: expected a string",
        "[record]\nrotate = true\n": "record.rotate: unknown key (known keys: chunk_bytes, commands",
    }
    for case, expected in cases.items():
        with pytest.raises(ConfigError) as caught:
            loads(case)
        assert expected in str(caught.value), (case, str(caught.value))
    config = loads(f'[record]\nfolder = "{tmp_path}"\nmax_file_s = 60\nmax_total_bytes = 1000000\n')
    assert config.record.enabled
    assert not loads("").record.enabled


async def _health(port: int) -> dict[str, object]:
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/healthz") as reply:
        body: dict[str, object] = await reply.json()
        return body


async def test_rotation_by_size_prunes_the_oldest_and_every_file_reads(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    record = (
        f'[record]\nfolder = "{folder}"\nmax_file_bytes = 16384\nchunk_bytes = 4096\nmax_total_bytes = 65536\n'
        'compression = "lz4"\n'
    )
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices=FAST_SIM, extra=record)) as gateway:
        async with asyncio.timeout(40):
            while True:
                state = (await _health(gateway.http_port))["record"]
                assert isinstance(state, dict)
                if state["files_removed"] >= 2:
                    break
                await asyncio.sleep(0.2)
        assert state["recording"], state
        assert state["dropped"] == 0, state
        assert not state["error"], state
        async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/metrics") as reply:
            metrics = await reply.text()
        assert "hwgw_record_written_total" in metrics, metrics
        assert "hwgw_record_files_removed_total" in metrics, metrics
    files = sorted(folder.glob("hwgateway-*.mcap"))
    assert len(files) >= 3
    total = sum(f.stat().st_size for f in files)
    assert total <= 65536 + 16384 + 8192, [f.stat().st_size for f in files]  # the limit, give or take the last file
    for path in files:
        counts, messages, info = python_read(path)  # a complete file: summary, statistics, footer
        if path != files[-1]:
            # The newest file is cut by the stop: opened just before it, it may hold nothing but the
            # devices' availability (seen once: two `_gateway/device` messages, 1,961 bytes).
            assert counts["sim-1/state"] > 0, path
        assert counts["_gateway/device"] >= 1, path  # each file starts with the availability of every device
        assert info["metadata"]["hwgateway"]["gateway_version"], path
        node = node_read(path)
        assert node["total"] == len(messages), path
        assert node["ordered"], path
        assert node["decodeErrors"] == 0, path
        assert node["compression"] == ["lz4"], path
    sizes = [f.stat().st_size for f in files[:-1]]
    assert all(16384 <= size < 16384 + 16384 for size in sizes), sizes


async def test_rotation_by_time_with_commands_results_and_metadata(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    record = f'[record]\nfolder = "{folder}"\nmax_file_s = 1.0\nchunk_bytes = 4096\n'
    secret = '[auth]\ntokens = ["a-long-secret-token-0123456789"]\n'
    async with running_gateway(tmp_path, gateway_config(tmp_path, extra=record + secret)) as gateway:
        digest = (await _health(gateway.http_port))["config_digest"]
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws") as ws:
            client = await WsClient(ws).start()
            await client.ok("auth", token="a-long-secret-token-0123456789")
            await client.ok("command", device="sim-1", type="led", data={"index": 1, "rgb": [1, 0, 0]})
            error = await client.error("command", device="sim-1", type="led", data={"index": "x"})
            assert error["code"] == "invalid_argument"
            await asyncio.sleep(2.5)
            await client.ok("command", device="sim-1", type="led", data={"index": 0, "rgb": [0, 1, 0]})
            await client.ok("estop")
    files = sorted(folder.glob("hwgateway-*.mcap"))
    assert len(files) >= 3, files
    commands: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for path in files:
        counts, messages, info = python_read(path)
        meta = info["metadata"]["hwgateway"]
        assert meta["config_digest"] == digest
        assert len(str(digest)) == 64
        assert [d["id"] for d in json.loads(meta["devices"])] == ["sim-1"]
        assert "secret" not in json.dumps(meta)
        assert node_read(path)["total"] == len(messages)
        for topic, _, _, _, data in messages:
            if topic == "_gateway/command":
                commands.append(json.loads(data))
            elif topic == "_gateway/command_result":
                results.append(json.loads(data))
        assert counts["sim-1/state"] > 10
    assert [(c["type"], c["device"]) for c in commands] == [("led", "sim-1")] * 3 + [("estop", "*")]
    assert commands[0]["data"] == {"index": 1, "rgb": [1, 0, 0]}
    by_number = {r["command"]: r for r in results}
    assert [by_number[c["command"]]["ok"] for c in commands] == [True, False, True, True]
    bad = by_number[commands[1]["command"]]
    assert bad["error"]["code"] == "invalid_argument", bad
    assert "data.index" in bad["error"]["message"], bad
    assert all(c["client"] == commands[0]["client"] for c in commands)
    # the two commands 2.5 s apart landed in different files
    assert len({c["command"] for c in commands}) == 4


async def test_a_full_writer_queue_drops_samples_counts_them_and_the_loop_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    record = f'[record]\nfolder = "{folder}"\nqueue = 1\n'  # the writer thread drains every 20 ms
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices=FAST_SIM, extra=record)) as gateway:
        async with asyncio.timeout(20):
            while True:
                health = await _health(gateway.http_port)
                state = health["record"]
                assert isinstance(state, dict)
                if state["dropped"] > 0 and state["written"] > 0:
                    break
                await asyncio.sleep(0.2)
        assert state["recording"], state
        assert health["status"] == "ok", health  # drops are the recorder's, not the gateway's health
        async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/metrics") as reply:
            metrics = await reply.text()
        dropped = [line for line in metrics.splitlines() if line.startswith("hwgw_record_dropped_total ")]
        assert dropped, metrics
        assert float(dropped[0].split()[1]) > 0
    (path,) = folder.glob("*.mcap")
    counts, _, _ = python_read(path)
    assert counts["sim-1/state"] > 0
