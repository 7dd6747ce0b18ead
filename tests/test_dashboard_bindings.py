"""A binding on the dashboard, in Debian's Chromium (the dashboard tests' harness), against the real daemon.

`hwgateway run` with a simulated controller whose left trigger drives a simulated Thymio through a
binding (`deadman = "none"`). The page shows the binding's card (kind `binding`) with its live
status (state, deadman, input age, last output); its Pause button makes it send its safe output
(the VM's motor targets read 0 through the daemon) and show `paused`, and Resume makes it drive again.
"""

from __future__ import annotations

import time
from pathlib import Path

from playwright.async_api import Browser, expect

from tests.harness import Client, connect, gateway_config, start_gateway
from tests.test_dashboard import browser, open_page, screenshot

__all__ = ["browser"]  # the Chromium fixture, shared with the dashboard's own tests

WAIT_S = 15.0
DEVICES = """
[devices.pad]
kind = "sim"
rate_hz = 20.0

[devices.thymio]
kind = "aseba"
simulate = true

[bindings.drive]
source = "pad"
target = "thymio"
mode = "tank"
deadman = "none"
rate_hz = 20.0
timeout_s = 0.5
priority = 120
inputs.left = "state.axes.left_trigger"
inputs.right = "state.axes.left_trigger"
outputs.left = { command = "hwgateway/ThymioMotors", field = "left", max = 300 }
outputs.right = { command = "hwgateway/ThymioMotors", field = "right", max = 300 }
"""


async def motor_targets(client: Client) -> tuple[int, int]:
    """`motor.left.target` and `motor.right.target` of the simulated Thymio's VM."""
    values = []
    for variable in ("motor.left.target", "motor.right.target"):
        answer = await client.ok(
            "command", device="thymio", type="asebaros_msgs/GetVariable", data={"variable": variable}
        )
        values.append(answer["data"][0])
    return values[0], values[1]


async def until_targets(client: Client, driving: bool, what: str) -> None:
    """Until the targets are 0 (`driving` False) or alike and not 0 (True); a hang guard, not a measure."""
    seen: tuple[int, int] | None = None
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        seen = await motor_targets(client)
        if (seen[0] == seen[1] != 0) if driving else seen == (0, 0):
            return
    raise AssertionError(f"{what}: the motor targets are {seen}")


async def test_a_binding_shows_on_the_dashboard_and_pauses_from_it(tmp_path: Path, browser: Browser) -> None:
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, DEVICES))
    try:
        watcher = await connect(gateway, "ws")
        await watcher.until_connected({"pad", "thymio", "drive"}, timeout=WAIT_S)
        await until_targets(watcher, True, "the binding drives")
        page, errors = await open_page(browser, gateway.base_url + "/")
        await expect(page.locator("body")).to_have_attribute("data-connection", "ready")
        card = page.locator('section.device[data-device="drive"]')
        await expect(card.locator(".kind")).to_have_text("binding")
        status = card.locator('[data-topic="drive/status"]')
        await expect(status.locator(".binding-state")).to_have_text("active")
        await expect(status.locator(".lamp.on")).to_contain_text(["deadman held"])
        await expect(status.locator(".binding-output")).to_contain_text("thymio hwgateway/ThymioMotors: left")
        await expect(status.locator(".binding-age")).not_to_have_text("–")

        pause = card.locator('[data-command="hwgateway/BindingPause"]')
        await pause.get_by_role("button", name="Pause").click()
        await expect(pause.locator("output.result")).to_have_attribute("data-state", "ok")
        await expect(status.locator(".binding-state")).to_have_text("paused")
        await expect(status.locator(".binding-reason")).to_have_text("paused")
        await until_targets(watcher, False, "paused from the dashboard")
        await screenshot(page, "dashboard-binding-paused.png")

        resume = card.locator('[data-command="hwgateway/BindingResume"]')
        await resume.get_by_role("button", name="Resume").click()
        await expect(resume.locator("output.result")).to_have_attribute("data-state", "ok")
        await expect(status.locator(".binding-state")).to_have_text("active")
        await until_targets(watcher, True, "resumed from the dashboard")
        await watcher.close()
        assert errors == []
    finally:
        assert await gateway.stop() == 0
