"""Generic `led`, `sound` and `rumble` on every kind of demo device: each result says what the hardware got.

Also: the Thymio's samples made from its events carry the time they arrived, not zero."""

from __future__ import annotations

import time
from pathlib import Path

from hwgateway.client import connect
from tests.harness import free_port, start_demo


async def test_each_device_answers_what_it_applied(tmp_path: Path) -> None:
    demo = await start_demo(tmp_path, free_port(), free_port())
    try:
        async with connect(f"unix:{demo.unix_socket}") as gw:
            events = gw.device_events()
            while len(gw.device_status) < 6 or any(s.status != "connected" for s in gw.device_status.values()):
                await anext(events)

            # A Wii Remote LED is on or off: 0.3 is below its threshold, and the result says so.
            dim = await gw.command("wiimote-demo", "led", {"index": -1, "rgb": [0.3, 0.3, 0.3]})
            assert dim["leds"] == [False, False, False, False]
            assert dim["applied"].startswith("LED 1, 2, 3, 4 off:")
            assert "at least 0.5 (got 0.3)" in dim["applied"]
            bright = await gw.command("wiimote-demo", "led", {"index": 1, "rgb": [0, 0.6, 0]})
            assert bright["leds"] == [False, True, False, False]
            assert bright["applied"].startswith("LED 2 on:")
            weak = await gw.command("wiimote-demo", "rumble", {"low": 0.2, "high": 0.2, "duration_s": 1})
            assert weak["rumble"] is False
            assert weak["applied"].startswith("rumble off:")
            strong = await gw.command("wiimote-demo", "rumble", {"low": 0, "high": 0.9, "duration_s": 0.2})
            assert strong["rumble"] is True
            assert strong["applied"].startswith("rumble on for 0.2 s:")

            # The Thymio's RGB LEDs take 0..32 per channel, its tones whole Hz in 1/60 s steps.
            led = await gw.command("thymio-demo", "led", {"index": 2, "rgb": [1, 0.5, 0.01]})
            assert (led["led"], led["rgb"]) == ("bottom right", [32, 16, 0])
            tone = await gw.command("thymio-demo", "sound", {"frequency_hz": 440.7, "duration_s": 0.5})
            assert (tone["frequency_hz"], tone["duration_s"]) == (440, 0.5)
            muted = await gw.command("thymio-demo", "sound", {"frequency_hz": 440, "volume": 0})
            assert muted["sound"] is False

            # The arm's LED ring and the gamepad's light bar take 8 bits per channel.
            ring = await gw.command("arm-demo", "led", {"rgb": [1, 0.5, 0]})
            assert ring["rgb"] == [255, 128, 0]
            assert ring["applied"].startswith("LED ring at #ff8000")
            assert isinstance(ring["frame_id"], int)
            pad = await gw.command("gamepad-demo", "led", {"rgb": [0, 0, 1]})
            assert pad == {"rgb": [0, 0, 255]}
            rumble = await gw.command("gamepad-demo", "rumble", {"low": 1, "high": 0.5, "duration_s": 0.1})
            assert rumble == {"low": 65535, "high": 32768, "duration_ms": 100}

            async with gw.subscribe("thymio-demo/node/1/buttons", "thymio-demo/node/1/events/state") as samples:
                seen: dict[str, float] = {}
                while len(seen) < 2:
                    sample = await anext(samples)
                    stamp = sample.data.get("timestamp") or sample.data.get("stamp")
                    assert stamp is not None
                    seen[sample.topic] = stamp["sec"] + stamp["nanosec"] * 1e-9
                    assert abs(sample.stamp - seen[sample.topic]) < 1e-6  # the envelope's stamp is the same time
            for topic, stamp in seen.items():
                assert abs(stamp - time.time()) < 30, (topic, stamp)
    finally:
        assert await demo.stop() == 0
