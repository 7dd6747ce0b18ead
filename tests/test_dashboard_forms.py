"""The dashboard usable without the docs open (issue 41), in Debian's Chromium against one real daemon.

One in-process daemon runs `gateway/demo.toml` (every simulated device kind) with three named tokens:
`admin`, a read-only `reader` and `thymio-only` (control of `thymio-*`). One browser serves every test.
Checked: command forms generated from `describe` (choices for enums and constants, checkboxes for bit
fields and boolean lists, the micro:bit's 5 × 5 grid, a multi-line Aseba source editor, units and
ranges beside numbers, the doc as help, how long each effect lasts, hold-to-drive only on drives); the
signed-in token shown and what it may not command disabled, saying why; STOP ALL unavailable before
sign-in and without a connection; the activity panel; the plot picker on a numeric field of each device
kind; and the layout at 1366×900 and 390×844, with clipping and overlap computed from the page's boxes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, ConsoleMessage, Page, ViewportSize, WebSocketRoute, async_playwright, expect

from gateway.credentials import hash_token
from tests.conftest import require_peer
from tests.harness import demo_config
from tests.inprocess import InProcessGateway, running_gateway
from tests.test_dashboard import ARTIFACTS, CHROMIUM_ARGS

# A hang guard, not a measure: one test reads many forms on a page that streams nine devices.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(180)]

ADMIN = "forms-admin-token-0123"
READER = "forms-reader-token-0123"
THYMIO_ONLY = "forms-thymio-token-0123"
AUTH = f"""
[auth.tokens.admin]
hash = "{hash_token(ADMIN)}"
role = "admin"

[auth.tokens.reader]
hash = "{hash_token(READER)}"
role = "read"

[auth.tokens.thymio-only]
hash = "{hash_token(THYMIO_ONLY)}"
role = "control"
devices = ["thymio-*"]
"""
DESKTOP: ViewportSize = {"width": 1366, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
WAIT_MS = 20000

# Run in the page: every control's leaf inputs must lie inside its card (no clipping), no two leaf inputs
# of one control may overlap, the page must not scroll sideways, and device headings stay on one line
# (ids have no spaces: a second line would be a word broken in the middle).
GEOMETRY_JS = """
() => {
  const problems = [];
  const box = (el) => el.getBoundingClientRect();
  const visible = (el) => { const r = box(el); return r.width > 0 && r.height > 0; };
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    problems.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${window.innerWidth}`);
  let leaves = 0;
  for (const card of document.querySelectorAll("section.device:not([hidden]):not(.collapsed)")) {
    const c = box(card);
    for (const control of card.querySelectorAll("fieldset.control")) {
      const inputs = [...control.querySelectorAll("input, select, textarea, button, .meta")].filter(visible);
      leaves += inputs.length;
      for (const el of inputs) {
        const r = box(el);
        if (r.left < c.left - 1 || r.right > c.right + 1)
          problems.push(`${card.dataset.device} ${control.dataset.command}: ${el.tagName} clipped`);
      }
      for (let i = 0; i < inputs.length; i++)
        for (let j = i + 1; j < inputs.length; j++) {
          const a = box(inputs[i]), b = box(inputs[j]);
          const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
          const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
          if (w > 1 && h > 1)
            problems.push(`${control.dataset.command}: ${inputs[i].tagName} overlaps ${inputs[j].tagName}`);
        }
    }
    const heading = card.querySelector("h2");
    const lineHeight = parseFloat(getComputedStyle(heading).lineHeight) || 24;
    if (box(heading).height > lineHeight * 1.5) problems.push(`${card.dataset.device}: heading wraps`);
  }
  return { problems, leaves };
}
"""

# Run in the page at desktop size: cards in one column follow each other without a large blank.
BLANKS_JS = """
() => {
  const cards = [...document.querySelectorAll("section.device:not([hidden])")].map((c) => c.getBoundingClientRect());
  const columns = new Map();
  for (const r of cards) columns.set(Math.round(r.left), [...(columns.get(Math.round(r.left)) || []), r]);
  const gaps = [];
  for (const column of columns.values()) {
    column.sort((a, b) => a.top - b.top);
    for (let i = 1; i < column.length; i++) gaps.push(column[i].top - column[i - 1].bottom);
  }
  return { columns: columns.size, gaps };
}
"""


# Run in the page: for each query [device, command, selector, what], the count of matches, their texts,
# the first one's text, or its select's option texts.
FORM_FACTS_JS = """
(queries) => Object.fromEntries(Object.entries(queries).map(([name, [device, command, selector, what]]) => {
  const control = document.querySelector(`[data-device="${device}"] fieldset.control[data-command="${command}"]`);
  const all = control ? [...control.querySelectorAll(selector)] : [];
  const text = (el) => (el?.textContent ?? "").trim();
  if (what === "count") return [name, all.length];
  if (what === "texts") return [name, all.map(text)];
  if (what === "options") return [name, all[0] ? [...all[0].options].map(text) : null];
  return [name, text(all[0])];
}))
"""
GESTURE, MOTORS, POSITION, WRIST = (
    ("thymio-demo", "thymio_msgs/LedGesture"),
    ("thymio-demo", "hwgateway/ThymioMotors"),
    ("lego-demo", "hwgateway/LegoMotorPosition"),
    ("arm-demo", "kortex/WristCyclicC61/Command"),
)
# What each kind of field looks like: named choices for LedGesture's constant groups and a LEGO
# end_state, units from the name or the doc, ranges, a boolean list and a bit mask as checkboxes, one
# button per Aseba VM command, LEGO ports to pick, how long a command lasts, hold-to-drive on drives only.
FORM_QUERIES = {
    "gesture": (*GESTURE, '[data-field="gesture"] select', "options"),
    "wave": (*GESTURE, '[data-field="wave"] select', "options"),
    "led group": (*GESTURE, '[data-field="leds"] select', "options"),
    "period": (*GESTURE, '[data-field="period"] .meta', "text"),
    "length": (*GESTURE, '[data-field="length"] .meta', "text"),
    "mask": (*GESTURE, '.bits[data-field="mask"] input[type=checkbox]', "count"),
    "vm": ("thymio-demo", "hwgateway/AsebaVMControl", "button[data-vm]", "texts"),
    "source": ("thymio-demo", "hwgateway/AsebaCompile", "textarea.source", "count"),
    "motors effect": (*MOTORS, ".effect", "text"),
    "motors left": (*MOTORS, '[data-field="left"] .meta', "text"),
    "motors hold": (*MOTORS, "button.hold", "count"),
    "speed hold": ("lego-demo", "hwgateway/LegoMotorSpeed", "button.hold", "count"),
    "speed effect": ("lego-demo", "hwgateway/LegoMotorSpeed", ".effect", "text"),
    "position hold": (*POSITION, "button.hold", "count"),
    "position effect": (*POSITION, ".effect", "text"),
    "end_state": (*POSITION, '[data-field="end_state"] select', "options"),
    "position port": (*POSITION, '[data-field="port"] select', "options"),
    "position speed": (*POSITION, '[data-field="speed_percent"] .meta', "text"),
    "position deg": (*POSITION, '[data-field="position_deg"] .meta', "text"),
    "stop hold": ("lego-demo", "hwgateway/LegoMotorStop", "button.hold", "count"),
    "stop port": ("lego-demo", "hwgateway/LegoMotorStop", '[data-field="port"] select', "options"),
    "digital outputs": (*WRIST, '.bits[data-field="digital_outputs_state"] input', "count"),
    "analog output": (*WRIST, '[data-field="analog_output_a_channel_1_value"] .meta', "text"),
    "led ring": (*WRIST, '[data-field="led_ring_rgb"] input[type=color]', "count"),
}
LEGO_PORTS = ["port A", "port B", "port C", "port D"]
FORM_FACTS = {
    "gesture": ["off (0)", "wave (1)"],
    "wave": ["rect (0)", "harmonic (1)"],
    "led group": ["circle (0)", "proximity (1)", "buttons (2)"],
    "period": "s · 0 … 3600",
    "length": "LEDs · 0 … 65535",
    "mask": 8,
    "vm": ["run", "stop", "pause", "step", "reset"],
    "source": 1,
    "motors effect": "Each Send drives for 1 s (the motor lease), then the wheels stop; Hold to drive keeps sending "
    "while held and stops on release.",
    "motors left": "-500 … 500",
    "motors hold": 1,
    "speed hold": 1,
    "speed effect": "Runs until Stop, STOP ALL, or this page disconnects (the gateway then stops the motor); "
    "Hold to drive stops it on release.",
    "position hold": 0,
    "position effect": "Turns once to the position, then floats, holds or brakes as end_state says.",
    "end_state": ["float (0)", "hold (126)", "brake (127)"],
    "position port": LEGO_PORTS,
    "position speed": "% · 1 … 100",
    "position deg": "°",
    "stop hold": 0,
    "stop port": ["every motor", *LEGO_PORTS],
    "digital outputs": 8,
    "analog output": "V · 0 … 25",
    "led ring": 1,
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessGateway]:
    """The demo's devices behind three named tokens."""
    tmp_path = tmp_path_factory.mktemp("forms")
    # The demo's fastest streams slowed down: the page stays light on a loaded machine.
    config = demo_config(tmp_path, extra=AUTH).replace("rate_hz = 100.0", "rate_hz = 10.0")
    config = config.replace("publish_rate_hz = 30.0", "publish_rate_hz = 5.0")
    config = config.replace("accelerometer_period_ms = 80", "accelerometer_period_ms = 640")
    config = config.replace("magnetometer_period_ms = 160", "magnetometer_period_ms = 640")
    async with running_gateway(tmp_path, config) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium from Debian, shared by this file's tests (each page has its own context)."""
    executable = require_peer("chromium")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


async def signed_in(browser: Browser, gateway: InProcessGateway, token: str, errors: list[str]) -> Page:
    """A new page (its own storage) signed in with `token`, every device listed."""
    page = await browser.new_page(viewport=DESKTOP)
    page.on("pageerror", lambda error: errors.append(f"exception: {error}"))

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    await page.goto(gateway.base_url + "/")
    await expect(page.locator("body")).to_have_attribute("data-connection", "auth", timeout=WAIT_MS)
    await page.locator("#token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("body")).to_have_attribute("data-connection", "ready", timeout=WAIT_MS)
    return page


def control(page: Page, device: str, command: str) -> Any:
    return page.locator(f'[data-device="{device}"] fieldset.control[data-command="{command}"]')


async def until_connected(page: Page, device: str) -> None:
    await expect(page.locator(f'[data-device="{device}"] .status')).to_have_text("connected", timeout=WAIT_MS)


async def test_typed_controls_plots_and_layout_at_both_sizes(gateway: InProcessGateway, browser: Browser) -> None:
    errors: list[str] = []
    page = await signed_in(browser, gateway, ADMIN, errors)
    await expect(page.locator("#who")).to_have_text("signed in as admin · admin · *", timeout=WAIT_MS)
    await expect(page.locator("#estop")).to_be_enabled(timeout=WAIT_MS)

    # micro:bit: a 5 × 5 grid of checkboxes; two LEDs lit reach the device.
    leds = control(page, "microbit-demo", "hwgateway/MicrobitLeds")
    assert await leds.locator(".matrix input[type=checkbox]").count() == 25
    await expect(leds.locator(".help")).to_contain_text("5 × 5 matrix", timeout=WAIT_MS)
    await until_connected(page, "microbit-demo")
    await leds.locator('input[data-r="0"][data-c="0"]').check()
    await leds.locator('input[data-r="4"][data-c="4"]').check()
    await leds.get_by_role("button", name="Send").click()
    await expect(leds.locator("output.result")).to_have_attribute("data-state", "ok", timeout=WAIT_MS)
    sent = page.locator('.activity-item[data-kind="command"][data-about="microbit-demo"]')
    await expect(sent.first).to_contain_text(
        'hwgateway/MicrobitLeds {"rows":[[true,false,false,false,false]', timeout=WAIT_MS
    )

    # Readouts named as their makers do: micro:bit buttons A and B, its magnetometer in µT; LEGO ports
    # by letter and the Technic hub's built-in tilt sensor by what it is; the arm's state by its
    # ArmState name and its dropped cycles explained.
    lego_headings = page.locator('[data-device="lego-demo"] .stream h3')
    await expect(page.locator('[data-topic="lego-demo/port/A"] h3')).to_contain_text("port A", timeout=WAIT_MS)
    tilt = page.locator('[data-topic="lego-demo/port/0x63"] h3')
    await expect(tilt).to_contain_text("built-in tilt sensor (port 0x63)", timeout=WAIT_MS)
    assert not [text for text in await lego_headings.all_text_contents() if "port/" in text]
    await control(page, "lego-demo", "hwgateway/SimButton").locator('button[data-button="green"]').click()
    hub_button = page.locator('[data-topic="lego-demo/button"] .pill')
    await expect(hub_button).to_have_text(["hub button"], timeout=WAIT_MS)
    # The arm reports its state when the wrist's first command takes it into low-level servoing.
    wrist = control(page, "arm-demo", "kortex/WristCyclicC61/Command")
    await wrist.locator("input[type=checkbox]").first.check()
    await wrist.get_by_role("button", name="Send").click()
    await expect(wrist.locator("output.result")).to_have_attribute("data-state", "ok", timeout=WAIT_MS)
    arm_state = page.locator('[data-topic="arm-demo/arm_state"] .arm-state')
    await expect(arm_state).to_have_attribute("data-state", "ARMSTATE_SERVOING_LOW_LEVEL", timeout=WAIT_MS)
    await expect(arm_state).to_have_text("servoing low level (6)")
    microbit_state = page.locator('[data-topic="microbit-demo/state"]')
    await expect(microbit_state.locator('[data-field="A"]')).to_be_visible(timeout=WAIT_MS)
    await expect(microbit_state.locator('[data-field="magnetic_field µT"]')).to_be_visible(timeout=WAIT_MS)
    note = page.locator('[data-topic="arm-demo/cyclic"] .cyclic-note')
    await expect(note).to_contain_text("cycles dropped", timeout=WAIT_MS)
    await expect(note).to_contain_text("not answer within the reply timeout", timeout=WAIT_MS)

    # The typed forms, read in one pass (each query: device, command, CSS selector, what to read).
    found = await page.evaluate(FORM_FACTS_JS, FORM_QUERIES)
    assert found == FORM_FACTS
    # A program is edited on several lines.
    source = control(page, "thymio-demo", "hwgateway/AsebaCompile").locator("textarea.source")
    await source.fill("var a = 1\nvar b = 2\n")
    assert await source.input_value() == "var a = 1\nvar b = 2\n"

    # LEGO: port A driven at 40 %; its position is plotted by itself and moves.
    await until_connected(page, "lego-demo")
    speed = control(page, "lego-demo", "hwgateway/LegoMotorSpeed")
    await speed.locator('[data-field="port"] select').select_option("A")
    await speed.locator('[data-field="speed_percent"] input').fill("40")
    await speed.get_by_role("button", name="Send").click()
    await expect(speed.locator("output.result")).to_have_attribute("data-state", "ok", timeout=WAIT_MS)
    lego_plot = page.locator('[data-picker="lego-demo"] .readout[data-series="port/A position_deg"] b')
    await expect(lego_plot).not_to_have_text("–", timeout=WAIT_MS)
    first = await lego_plot.text_content()
    await expect(lego_plot).not_to_have_text(first or "", timeout=WAIT_MS)
    stop = control(page, "lego-demo", "hwgateway/LegoMotorStop")
    await stop.get_by_role("button", name="Send").click()
    await expect(stop.locator("output.result")).to_have_attribute("data-state", "ok", timeout=WAIT_MS)

    # The plot picker: a numeric field of each device kind, plotted with a value; pause and zoom.
    for device in ("sim-pad", "gamepad-demo", "arm-demo", "thymio-demo", "wiimote-demo", "microbit-demo"):
        picker = page.locator(f'[data-picker="{device}"]')
        choice = picker.locator("select.pick-field option").nth(1)
        await expect(choice).to_be_attached(timeout=WAIT_MS)
        label = (await choice.text_content() or "").replace(" · ", " ")
        await picker.locator("select.pick-field").select_option(index=1)
        await picker.locator("button.pick-add").click()
        await expect(picker.locator(".readout b").first).not_to_have_text("–", timeout=WAIT_MS)
        await expect(picker.locator(".readout").first).to_contain_text(label, timeout=WAIT_MS)
    picker = page.locator('[data-picker="sim-pad"]')
    await picker.locator("button.pick-pause").click()
    await expect(picker.locator("button.pick-pause")).to_have_attribute("aria-pressed", "true", timeout=WAIT_MS)
    await picker.locator("select.pick-window").select_option("60")
    await expect(picker.locator("canvas")).to_be_visible(timeout=WAIT_MS)

    # Layout: no large blanks between cards of a column on a desktop.
    blanks = await page.evaluate(BLANKS_JS)
    assert blanks["columns"] == 2, blanks
    assert max(blanks["gaps"]) < 24, blanks
    ARTIFACTS.mkdir(exist_ok=True)
    for size, name in ((DESKTOP, "desktop"), (PHONE, "phone")):
        await page.set_viewport_size(size)
        geometry = await page.evaluate(GEOMETRY_JS)
        assert geometry["leaves"] > 300, geometry
        assert geometry["problems"] == [], geometry["problems"][:20]
        for device, command in (
            ("microbit-demo", "hwgateway/MicrobitLeds"),
            ("thymio-demo", "thymio_msgs/LedGesture"),
            ("arm-demo", "kortex/WristCyclicC61/Command"),
            ("lego-demo", "hwgateway/LegoMotorPosition"),
        ):
            short = command.rsplit("/", 1)[-1]
            await control(page, device, command).screenshot(path=ARTIFACTS / f"forms-{name}-{short}.png")
    assert errors == []
    await page.close()


async def test_the_token_decides_what_is_enabled_and_says_why(gateway: InProcessGateway, browser: Browser) -> None:
    errors: list[str] = []
    reader = await signed_in(browser, gateway, READER, errors)
    await expect(reader.locator("#who")).to_have_text("signed in as reader · read · *", timeout=WAIT_MS)
    led = control(reader, "sim-lamp", "led")
    await expect(led).to_have_attribute("disabled", "", timeout=WAIT_MS)
    await expect(led.get_by_role("button", name="red")).to_be_disabled()
    await expect(led.locator(".not-allowed")).to_have_text(
        "Not allowed: you are signed in as reader, a read-only token (it reads and may STOP ALL)."
    )
    # A read-only command stays usable, and so does STOP ALL.
    read_variable = control(reader, "thymio-demo", "asebaros_msgs/GetVariable")
    await expect(read_variable.get_by_role("button", name="Send")).to_be_enabled(timeout=WAIT_MS)
    await read_variable.locator('[data-field="variable"] input').fill("motor.left.target")
    await read_variable.get_by_role("button", name="Send").click()
    await expect(read_variable.locator("output.result")).to_have_attribute("data-state", "ok", timeout=WAIT_MS)
    await expect(reader.locator("#estop")).to_be_enabled(timeout=WAIT_MS)
    await reader.close()

    restricted = await signed_in(browser, gateway, THYMIO_ONLY, errors)
    await expect(restricted.locator("#who")).to_have_text(
        "signed in as thymio-only · control · thymio-*", timeout=WAIT_MS
    )
    motors = control(restricted, "thymio-demo", "hwgateway/ThymioMotors")
    await expect(motors.get_by_role("button", name="Send")).to_be_enabled(timeout=WAIT_MS)
    lamp = control(restricted, "sim-lamp", "led")
    await expect(lamp).to_have_attribute("disabled", "", timeout=WAIT_MS)
    await expect(lamp.get_by_role("button", name="Set")).to_be_disabled()
    await expect(lamp.locator(".not-allowed")).to_have_text(
        "Not allowed: the token thymio-only may command only thymio-*."
    )
    await restricted.close()
    assert errors == []


async def test_stop_all_is_unavailable_before_sign_in_and_without_a_connection(
    gateway: InProcessGateway, browser: Browser
) -> None:
    page = await browser.new_page(viewport=PHONE)
    await page.goto(gateway.base_url + "/")
    await expect(page.locator("body")).to_have_attribute("data-connection", "auth", timeout=WAIT_MS)
    await expect(page.locator("#estop")).to_be_disabled(timeout=WAIT_MS)
    await expect(page.locator("#estop-why")).to_have_text(
        "STOP ALL is unavailable until you sign in with a token (any valid token may stop everything)."
    )
    await page.close()

    # The gateway's WebSocket refused (closed at once): the page says it has no connection.
    async def refuse(ws: WebSocketRoute) -> None:
        await ws.close(code=1011, reason="refused by the test")

    page = await browser.new_page(viewport=PHONE)
    await page.route_web_socket("**/ws", refuse)
    await page.goto(gateway.base_url + "/")
    await expect(page.locator("body")).to_have_attribute("data-connection", "closed", timeout=WAIT_MS)
    await expect(page.locator("#estop")).to_be_disabled(timeout=WAIT_MS)
    await expect(page.locator("#estop-why")).to_contain_text(
        "the page has no connection to the gateway", timeout=WAIT_MS
    )
    await expect(page.locator("#estop-why")).to_be_in_viewport(timeout=WAIT_MS)
    await page.screenshot(path=ARTIFACTS / "forms-phone-disconnected.png")
    await page.close()
