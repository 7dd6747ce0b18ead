"""A client that reads nothing for 5 s while 1 kHz flows: one slot per topic, then the newest values arrive.

What the stall costs in resident memory (socket buffers and allocator slack) is `bench/abuse.py`'s
`stall` measure, against the same window with the client reading.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import aiohttp
import pytest

from tests.harness import TransportName, connect, gateway_config, start_gateway

FAST_DEVICE = '[devices.fast]\nkind = "sim"\nrate_hz = 1000.0\n'
STALL_S = 5.0


async def metric(base_url: str, name: str, client: str) -> float:
    async with aiohttp.ClientSession() as http:
        text = await (await http.get(f"{base_url}/metrics")).text()
    found = re.search(rf'^{name}{{client="{client}"}} (\S+)$', text, re.MULTILINE)
    assert found, f"{name} for {client} not in /metrics"
    return float(found.group(1))


@pytest.mark.parametrize("transport", ["ws", "tcp"])
async def test_stalled_client_keeps_one_slot_per_topic_and_then_gets_the_newest(
    tmp_path: Path, transport: TransportName
) -> None:
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, FAST_DEVICE))
    try:
        # The client's receive buffer is fixed small and the gateway caps its send buffer
        # (server.send_buffer_bytes), so the stall reaches the gateway's mailbox instead of vanishing
        # into megabytes of autotuned kernel buffers.
        slow = await connect(gateway, transport, receive_buffer=32 * 1024)
        commander = await connect(gateway, "ws")
        session = slow.hello["session"]
        await slow.ok("subscribe", topics=["fast/**"])
        await asyncio.sleep(0.5)

        # The slow client reads nothing from here on; meanwhile its LED is changed twice.
        await commander.ok("command", device="fast", type="led", data={"rgb": [1, 0, 0]})
        depths = []
        for _ in range(int(STALL_S / 0.25)):  # its mailbox never holds more than one sample per topic
            depths.append(await metric(gateway.base_url, "hwgw_client_queue_depth", session))
            await asyncio.sleep(0.25)
        assert max(depths) <= 2, depths
        await commander.ok("command", device="fast", type="led", data={"rgb": [0, 0, 1]})
        assert await metric(gateway.base_url, "hwgw_client_queue_depth", session) <= 2  # one slot per topic
        assert await metric(gateway.base_url, "hwgw_client_coalesced_total", session) > 100
        healthy = await commander.ok("ping")  # the producer and the other clients never waited
        assert healthy["pong"] is True

        # Reading again, the client drains what the socket buffers held and then receives fresh values.
        resumed = time.time()
        async with asyncio.timeout(10):
            while True:
                message = await slow.recv()
                if message["op"] == "state" and message["topic"] == "fast/state" and message["recv_stamp"] > resumed:
                    break
                slow.pushed.append(message)
        outputs = await slow.wait_for(
            lambda m: m["op"] == "state" and m["topic"] == "fast/outputs" and m["data"]["leds"] == [[0.0, 0.0, 1.0]]
        )
        assert outputs["data"]["commands_received"] == 2
        await slow.close()
        await commander.close()
    finally:
        assert await gateway.stop() == 0
