"""The dashboard's admin tools, in Debian's Chromium against the real daemon: Add device, Pair, Options, Reload.

`hwgateway run` with one simulated device and no tokens (every client is admin), on a system bus
that is python-dbusmock's BlueZ (tests/test_pairing.py's fixtures). Reload applies the file as it
is now (a device added to it gets its card); Add device scans, and the Bluetooth families say what
to do with no adapter; Pair pairs a Wii Remote that shows up with its sync-button PIN, and shows
each step and the config to paste; Options changes a device's rate (only that device restarts) and
shows every problem of a bad value.
"""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect

from tests.harness import gateway_config, start_gateway
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
        rate = options.locator('input[data-option="rate_hz"]')
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
