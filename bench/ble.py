"""BLE benchmark on the virtual radio: connect + discovery, and a command through the adapter vs bare bleak.

Method: one process, one event loop, one Bumble virtual radio with a simulated micro:bit and a
simulated LEGO Technic hub. Measured, in interleaved rounds: (1) scan + connect + GATT discovery of
the micro:bit with bleak alone (`BleLink.open`), (2) an LED matrix write with response through the
`microbit` adapter's `handle_command` (the gateway's path without the client protocol) against the
same write through a bare `BleakClient.write_gatt_char`, and (3) a LEGO StartSpeed through the
`lego_hub` adapter (write plus waiting for the hub's Port Output Command Feedback) against a bare
bleak write of the same bytes followed by waiting for the feedback notification. Then (4) a write
the peer refuses (21 bytes to the micro:bit's 20-byte LED text: an ATT error response, raised as
`AttError`) against a write it accepts, on the same bare client, and (5) a scan for a name nobody
advertises (`find_device`, 0.3 s timeout) against a bare `asyncio.timeout(0.3)`: how far past its
timeout each ends, in ms. (4) and (5) were tests' wall-clock bounds until issue 34: an ATT error
under 0.5 s, a 0.3 s scan ending within 1.5 s. Medians and p99 over every sample, and the ratios
adapter/bare, refused/accepted and scan/bare. The radio is simulated, so the figures are the
software's cost, not air time: a real link adds 7.5-50 ms connection intervals per round trip.

Run:  scripts/loopback-only.sh .venv/bin/python bench/ble.py [--samples 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import contextlib  # noqa: E402 - after the path fix above

from bleak import BleakClient  # noqa: E402

from devices.ble.bumble_backend import AttError, BumbleClient  # noqa: E402
from devices.ble.link import Backend, BleLink, BleNotFound, Selector, find_device  # noqa: E402
from devices.ble.virtual_radio import shared_radio  # noqa: E402
from devices.lego.adapter import LegoHubAdapter, LegoHubOptions  # noqa: E402
from devices.microbit.adapter import MicrobitAdapter, MicrobitOptions  # noqa: E402
from devices.sim.lego_hub import SimulatedLegoHub  # noqa: E402
from devices.sim.microbit import SimulatedMicrobit  # noqa: E402
from gateway.bus import Bus  # noqa: E402
from gateway.core.adapter import Command, DeviceContext  # noqa: E402
from gateway.messages.lego import LegoMotorSpeed  # noqa: E402
from gateway.messages.microbit import MicrobitLeds  # noqa: E402
from protocols.lwp3 import messages as lwp  # noqa: E402
from protocols.lwp3.constants import HUB_CHARACTERISTIC_UUID, IoType, SystemType  # noqa: E402
from protocols.microbit import profile as mb  # noqa: E402


def summary(name: str, samples: list[float]) -> dict[str, Any]:
    """Median and p99 in ms."""
    ordered = sorted(samples)
    return {
        "name": name,
        "n": len(samples),
        "p50_ms": statistics.median(ordered) * 1e3,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3,
    }


async def started(adapter: Any) -> asyncio.Task[None]:
    task = asyncio.create_task(adapter.run())
    async with asyncio.timeout(10):
        while adapter.link is None or adapter.ctx.device_id not in connected:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
    return task


connected: set[str] = set()


def context(device_id: str) -> DeviceContext:
    return DeviceContext(
        device_id, Bus(), lambda status, _: connected.add(device_id) if status == "connected" else None
    )


async def main(samples: int) -> None:
    microbit = MicrobitAdapter(context("mb"), MicrobitOptions(simulate=True))
    hub = LegoHubAdapter(context("hub"), LegoHubOptions(simulate=True, sim_attached=("A=motor",)))
    tasks = [await started(microbit), await started(hub)]
    assert microbit.simulator is not None
    assert hub.simulator is not None
    radio = shared_radio()
    # The bare clients get peers of their own: a peripheral takes one connection at a time.
    mb_peer = SimulatedMicrobit(radio, "BBC micro:bit [bare]")
    hub_peer = SimulatedLegoHub(radio, SystemType.TECHNIC_HUB, {"A": IoType.TECHNIC_LARGE_MOTOR})
    await mb_peer.start()
    await hub_peer.start()

    connects: list[float] = []
    for _ in range(max(5, samples // 30)):
        begin = time.perf_counter()
        link = await BleLink.open(Selector(address=mb_peer.address), Backend.virtual(radio))
        connects.append(time.perf_counter() - begin)
        await link.close()
        await asyncio.sleep(0.05)  # advertising resumes after the disconnection

    bare_mb = BleakClient(mb_peer.address, backend=BumbleClient, radio=radio)
    await bare_mb.connect()
    bare_hub = BleakClient(hub_peer.address, backend=BumbleClient, radio=radio)
    await bare_hub.connect()
    feedback: asyncio.Queue[bytes] = asyncio.Queue()
    await bare_hub.start_notify(
        HUB_CHARACTERISTIC_UUID, lambda _, data: feedback.put_nowait(bytes(data)) if data[2] == 0x82 else None
    )
    rows = tuple(tuple((r + c) % 2 == 0 for c in range(5)) for r in range(5))
    matrix = mb.encode_matrix(rows)
    speed = lwp.encode(lwp.start_speed(0, 0))
    results: dict[str, list[float]] = {"mb_adapter": [], "mb_bare": [], "hub_adapter": [], "hub_bare": []}
    for index in range(samples):
        for path in ("adapter", "bare") if index % 2 == 0 else ("bare", "adapter"):
            begin = time.perf_counter()
            if path == "adapter":
                await microbit.handle_command(
                    Command("hwgateway/MicrobitLeds", MicrobitLeds(rows), "bench", time.monotonic() + 5)
                )
            else:
                await bare_mb.write_gatt_char(mb.LED_MATRIX_STATE, matrix, response=True)
            results[f"mb_{path}"].append(time.perf_counter() - begin)
            begin = time.perf_counter()
            if path == "adapter":
                await hub.handle_command(
                    Command("hwgateway/LegoMotorSpeed", LegoMotorSpeed("A", 0), "bench", time.monotonic() + 5)
                )
            else:
                await bare_hub.write_gatt_char(HUB_CHARACTERISTIC_UUID, speed, response=True)
                await feedback.get()
            results[f"hub_{path}"].append(time.perf_counter() - begin)
    print(summary("connect+discovery (micro:bit, 9 services)", connects))
    for name, values in results.items():
        print(summary(name, values))
    for device in ("mb", "hub"):
        adapter_p50 = statistics.median(results[f"{device}_adapter"])
        bare_p50 = statistics.median(results[f"{device}_bare"])
        print({"ratio": f"{device} adapter/bare p50", "value": round(adapter_p50 / bare_p50, 3)})
    writes = await refused_and_accepted_writes(bare_mb, samples)
    timings = {**writes, **await timeout_overshoots(radio, max(5, samples // 30))}
    for name, values in timings.items():
        print(summary(name, values))
    for ratio, (top, bottom) in {
        "refused/accepted write p50": ("att_refused_write", "att_accepted_write"),
        "scan/bare timeout overshoot p50": ("scan_overshoot", "bare_timeout_overshoot"),
    }.items():
        print({"ratio": ratio, "value": round(statistics.median(timings[top]) / statistics.median(timings[bottom]), 3)})
    await bare_mb.disconnect()
    await bare_hub.disconnect()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await microbit.close()
    await hub.close()
    await mb_peer.stop()
    await hub_peer.stop()


async def refused_and_accepted_writes(client: BleakClient, samples: int) -> dict[str, list[float]]:
    """Seconds of a LED-text write the peer refuses (21 bytes, ATT error 0x0D) and of one it accepts (20)."""
    results: dict[str, list[float]] = {"att_refused_write": [], "att_accepted_write": []}
    for index in range(samples):
        for refused in (True, False) if index % 2 == 0 else (False, True):
            begin = time.perf_counter()
            if refused:
                with contextlib.suppress(AttError):
                    await client.write_gatt_char(mb.LED_TEXT, b"x" * 21, response=True)
                    raise RuntimeError("the peer accepted 21 bytes of LED text")
            else:
                await client.write_gatt_char(mb.LED_TEXT, b"x" * 20, response=True)
            results["att_refused_write" if refused else "att_accepted_write"].append(time.perf_counter() - begin)
    return results


async def timeout_overshoots(radio: Any, rounds: int) -> dict[str, list[float]]:
    """Seconds past 0.3 s that a scan for nobody ends, and that a bare `asyncio.timeout(0.3)` does."""
    results: dict[str, list[float]] = {"scan_overshoot": [], "bare_timeout_overshoot": []}
    for index in range(rounds):
        for scan in (True, False) if index % 2 == 0 else (False, True):
            begin = time.perf_counter()
            if scan:
                with contextlib.suppress(BleNotFound):
                    await find_device(Selector(name="nobody"), 0.3, Backend.virtual(radio))
            else:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.3):
                        await asyncio.get_running_loop().create_future()
            results["scan_overshoot" if scan else "bare_timeout_overshoot"].append(time.perf_counter() - begin - 0.3)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=300)
    asyncio.run(main(parser.parse_args().samples))
