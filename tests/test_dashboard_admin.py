"""The dashboard's admin tools, in Debian's Chromium against the real daemon: Add device, Pair, Options, Reload.

`hwgateway run` with one simulated device and no tokens (every client is admin), on a system bus
that is python-dbusmock's BlueZ (tests/test_pairing.py's fixtures). Reload applies the file as it
is now (a device added to it gets its card); Add device scans, and the Bluetooth families say what
to do with no adapter; Pair pairs a Wii Remote that shows up with its sync-button PIN, and shows
each step and the config to paste; Options changes a device's rate (only that device restarts) and
shows every problem of a bad value.
"""

from __future__ import annotations

import json
from pathlib import Path

from playwright.async_api import Browser, WebSocketRoute, expect

from tests.harness import gateway_config, start_gateway
from tests.inprocess import start_in_process
from tests.test_dashboard import browser, open_page, screenshot
from tests.test_pairing import ADAPTER_NAME, REMOTE, REMOTE_NAME, Bluez, bluez, system_bus

__all__ = ["bluez", "browser", "system_bus"]  # the fixtures, shared with the dashboard's and pairing's tests

ONE = '[devices.one]\nkind = "sim"\nrate_hz = 10.0\n'
TWO = '[devices.two]\nkind = "sim"\nrate_hz = 10.0\n'
#: Edits of device options are kept beside the config file.
OVERRIDES = 'device_overrides = "overrides.toml"'


async def test_add_device_pair_and_reload_from_the_dashboard(tmp_path: Path, browser: Browser, bluez: Bluez) -> None:
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, ONE, server=OVERRIDES))
    try:
        page, errors = await open_page(browser, gateway.base_url + "/")
        await expect(page.locator("body")).to_have_attribute("data-connection", "ready")
        await page.locator("#admin summary").click()

        # Reload: the file with a second device; the report says so and the page shows its card.
        config = next(tmp_path.glob("gateway-*.toml"))
        config.write_text(gateway_config(tmp_path, ONE + TWO, server=OVERRIDES))
        reload = page.locator('[data-tool="reload"]')
        await reload.get_by_role("button", name="Reload config").click()
        await expect(reload.locator("output.result")).to_have_text("reloaded")
        await expect(reload.locator(".reload-report")).to_contain_text("started: two")
        await expect(page.locator('section.device[data-device="two"] .status')).to_have_text("connected")

        # Options: device two at 5 Hz; only it restarts, and the edit is kept beside the config file.
        options = page.locator('[data-tool="options"]')
        await options.get_by_role("button", name="Show options").click()
        await options.locator("select.options-device").select_option("two")
        await options.get_by_role("button", name="Show options").click()
        # The rows are device two's: the answer for device one, if it came late, was dropped.
        await expect(options.locator('.options-rows[data-device="two"]')).to_be_attached()
        rate = options.locator('.options-rows[data-device="two"] input[data-option="rate_hz"]')
        await expect(rate).to_have_value("10")
        await rate.fill("5")
        await options.get_by_role("button", name="Apply").click()
        await expect(options.locator(".reload-report")).to_contain_text("restarted: two")
        await expect(options.locator('.option-row[data-overridden="true"]')).to_contain_text("rate_hz")
        assert (tmp_path / "overrides.toml").read_text().endswith("[devices.two]\nrate_hz = 5\n")
        await expect(page.locator('section.device[data-device="two"] .status')).to_have_text("connected")
        # A value out of range: every problem named, nothing changed.
        await rate.fill("-1")
        await options.get_by_role("button", name="Apply").click()
        await expect(options.locator("output.result")).to_have_attribute("data-state", "error")
        await expect(options.locator(".reload-report")).to_contain_text("devices.two.rate_hz")
        assert (tmp_path / "overrides.toml").read_text().endswith("[devices.two]\nrate_hz = 5\n")

        # Add device: no adapter on this BlueZ, so the Bluetooth families say what to do.
        scan = page.locator('[data-tool="scan"]')
        await scan.locator('input[type="number"]').fill("0.5")
        await scan.get_by_role("button", name="Add device (scan)").click()
        await expect(scan.locator("output.result")).to_have_attribute("data-state", "ok")
        await expect(scan.locator(".skipped", has_text="wiimote:")).to_contain_text("no Bluetooth adapter: plug one in")
        await expect(scan.locator(".findings")).not_to_contain_text("null")

        # Pair: a Wii Remote whose sync button was pressed; its PIN, each step, and its config.
        bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
        bluez.mock("AddPairable", ADAPTER_NAME, REMOTE, REMOTE_NAME, "pin")
        pair = page.locator('[data-tool="pair"]')
        await pair.get_by_role("button", name="Pair").click()
        await expect(pair.locator("output.result")).to_have_text(
            f"paired: {REMOTE_NAME} at {REMOTE.lower()} is paired, trusted and connected"
        )
        await expect(pair.locator(".steps")).to_contain_text("answered the Wii Remote's PIN")
        await expect(pair.locator(".config")).to_contain_text('[devices.wiimote-00-1f-32-aa-bb-cc]\nkind = "wiimote"')
        await screenshot(page, "dashboard-admin.png")
        assert errors == []
    finally:
        assert await gateway.stop() == 0


async def test_a_late_answer_for_the_device_no_longer_chosen_is_not_shown(tmp_path: Path, browser: Browser) -> None:
    """Options for device one answered after device two's: the rows stay two's, so Apply cannot mix them."""
    two_at_20 = TWO.replace("10.0", "20.0")
    gateway = await start_in_process(tmp_path, gateway_config(tmp_path, ONE + two_at_20, server=OVERRIDES))
    held_ids: set[object] = set()
    held: list[str | bytes] = []
    routes: list[WebSocketRoute] = []

    def hold_device_one_s_options(ws: WebSocketRoute) -> None:
        """Pass every message both ways, except the answer to a `device_options` of device one: held."""
        server = ws.connect_to_server()
        routes.append(ws)

        def to_server(message: str | bytes) -> None:
            request = json.loads(message)
            if request.get("op") == "device_options" and request.get("device") == "one":
                held_ids.add(request["id"])
            server.send(message)

        def to_page(message: str | bytes) -> None:
            if json.loads(message).get("id") in held_ids:
                held.append(message)
            else:
                ws.send(message)

        ws.on_message(to_server)
        server.on_message(to_page)

    try:
        page = await browser.new_page()
        await page.route_web_socket("**/ws", hold_device_one_s_options)
        await page.goto(gateway.base_url + "/")
        await expect(page.locator("body")).to_have_attribute("data-connection", "ready")
        await page.locator("#admin summary").click()
        options = page.locator('[data-tool="options"]')
        await options.get_by_role("button", name="Show options").click()  # the first device, one: held
        await options.locator("select.options-device").select_option("two")
        await options.get_by_role("button", name="Show options").click()
        rows = options.locator('.options-rows[data-device="two"]')
        await expect(rows.locator('input[data-option="rate_hz"]')).to_have_value("20")
        assert len(held) == 1

        routes[0].send(held.pop())  # device one's answer, late
        # A reload's answer comes after it on the same connection: once it shows, the late one was read.
        reload = page.locator('[data-tool="reload"]')
        await reload.get_by_role("button", name="Reload config").click()
        await expect(reload.locator("output.result")).to_have_text("reloaded: nothing changed")
        await expect(rows.locator('input[data-option="rate_hz"]')).to_have_value("20")
        await expect(options.locator("output.result")).to_contain_text("two: edits are kept in")
        await page.close()
    finally:
        assert await gateway.stop() == 0
