"""The dashboard at `/` in a real browser: Debian's Chromium, driven by Playwright, against the real daemon.

Most tests run `hwgateway demo` or `hwgateway run` through the CLI and watch the simulated devices with a
separate WebSocket client. Widgets for device types that have no adapter yet (Wii Remote, Kortex,
Thymio, a motor command) are checked against `ScriptedGateway`, a stand-in speaking the same protocol
with the real message types. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from playwright.async_api import Browser, ConsoleMessage, Page, ViewportSize, async_playwright, expect

from gateway.messages import REGISTRY, schema_of, to_plain
from gateway.messages.common import Time, Vector3
from gateway.messages.creos import ControllerState
from gateway.messages.kortex import Feedback
from gateway.messages.thymio import Comm
from gateway.messages.wiimote import IrSourceInfo, State
from gateway.servers.http import STATIC_DIR
from tests.conftest import require_peer
from tests.harness import DEMO_DEVICES, GatewayUnderTest, connect, free_port, gateway_config, start_demo
from tests.inprocess import running_gateway

ARTIFACTS = Path(__file__).parent / "artifacts"
# Root in a container: no sandbox; and nothing that would try to reach the network or update itself.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium from Debian (no browser download), with a new empty profile."""
    executable = require_peer("chromium")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


async def open_page(browser: Browser, url: str) -> tuple[Page, list[str]]:
    """A page at `url`, and the console errors and uncaught exceptions it reports."""
    page = await browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            # Where: for a resource that failed to load, the resource's URL.
            where = message.location.get("url")
            errors.append(f"console: {message.text}" + (f" ({where})" if where else ""))

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"exception: {error}"))
    await page.goto(url)
    return page, errors


def unexpected_in_outage(errors: list[str], base_url: str) -> list[str]:
    """`errors` less what the browser logs of a gateway that is down: each refused connection.

    Those are the WebSocket's retries and the browser's own fetch of the page's icon (Chromium
    fetches it again a few hundred ms after a page loads, which can fall after the gateway stops).
    """
    icon_refused = f"net::ERR_CONNECTION_REFUSED ({base_url}/static/favicon.svg)"
    return [error for error in errors if "WebSocket connection to" not in error and not error.endswith(icon_refused)]


async def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    await page.evaluate("window.scrollTo(0, 0)")  # the sticky top bar belongs at the top of the picture
    await page.screenshot(path=str(path), full_page=True)
    return path


def outputs_of(device: str, predicate: Any = lambda data: True) -> Any:
    return lambda m: m["op"] == "state" and m["topic"] == f"{device}/outputs" and predicate(m["data"])


async def test_dashboard_shows_the_demo_live_and_commands_reach_the_devices(tmp_path: Path, browser: Browser) -> None:
    gateway = await start_demo(tmp_path, free_port(), free_port())
    try:
        watcher = await connect(gateway, "ws")
        devices = (await watcher.ok("list_devices"))["devices"]
        device_ids = [d["id"] for d in devices]
        assert {"sim-pad", "sim-lamp"} <= set(device_ids)
        # Simulated controllers count e-stops in their outputs; other demo devices report theirs in the result.
        simulated = [d["id"] for d in devices if "hwgateway/SimOutputs" in d["publishes"]]
        await watcher.ok("subscribe", topics=["*/outputs"])
        estopped = {}
        for device in simulated:
            estopped[device] = (await watcher.wait_for(outputs_of(device)))["data"]["estopped"]

        page, errors = await open_page(browser, gateway.base_url + "/")
        await expect(page.locator("body")).to_have_attribute("data-connection", "ready")
        shown = await page.locator("section.device").evaluate_all("cards => cards.map(c => c.dataset.device)")
        assert sorted(shown) == sorted(device_ids)
        await expect(page.locator('[data-device="sim-pad"] .status')).to_have_text("connected")

        # A live value: the pad's first axis keeps moving.
        axis = page.locator('[data-topic="sim-pad/state"] .readout[data-series="LX"] b')
        await expect(axis).not_to_have_text("–")
        first = await axis.text_content()
        await expect(axis).not_to_have_text(first or "")

        # An LED preset on sim-lamp: the page shows the result, and the device records the command.
        led = page.locator('[data-device="sim-lamp"] [data-command="led"]')
        await led.locator('button[data-preset="red"]').click()
        await expect(led.locator("output.result")).to_have_attribute("data-state", "ok")
        recorded = await watcher.wait_for(outputs_of("sim-lamp", lambda d: d["last_command"] == "led"))
        assert recorded["data"]["leds"] == [[1.0, 0.0, 0.0]] * 8
        last_command = page.locator('[data-topic="sim-lamp/outputs"] [data-field="last_command"] .text')
        await expect(last_command).to_have_text("led")

        # A refused command shows its error code and message.
        sound = page.locator('[data-device="sim-pad"] [data-command="sound"]')
        await sound.locator("input[type=number]").first.fill("30000")
        await sound.get_by_role("button", name="Play").click()
        await expect(sound.locator("output.result")).to_have_attribute("data-state", "error")
        await expect(sound.locator("output.result")).to_contain_text("invalid_argument: data.frequency_hz")

        # The emergency stop is always visible and reaches every device.
        await expect(page.locator("#estop")).to_be_in_viewport()
        await page.locator("#estop").click()
        await expect(page.locator("#estop-result")).to_have_attribute("data-state", "ok")
        await expect(page.locator("#estop-result")).to_have_text(f"✓ stopped {', '.join(device_ids)}")
        for device in simulated:
            await watcher.wait_for(outputs_of(device, lambda d, device=device: d["estopped"] == estopped[device] + 1))

        await page.wait_for_timeout(300)  # let the plots fill a little for the picture
        await screenshot(page, "dashboard.png")
        await watcher.close()
        assert errors == []
    finally:
        assert await gateway.stop() == 0


AUTH_DEVICES = """
[devices.sim-1]
kind = "sim"
rate_hz = 20.0
leds = 3

[devices.sim-broken]
kind = "sim"
rate_hz = 5.0
failing_commands = ["rumble"]
"""


async def test_dashboard_signs_in_with_a_token_and_shows_device_errors(tmp_path: Path, browser: Browser) -> None:
    config = gateway_config(tmp_path, AUTH_DEVICES, extra='[auth]\ntokens = ["dash-token-0123456"]\n')
    async with running_gateway(tmp_path, config) as gateway:
        page, errors = await open_page(browser, gateway.base_url + "/")
        await expect(page.locator("body")).to_have_attribute("data-connection", "auth")
        await expect(page.locator("#auth")).to_be_visible()
        assert await page.locator("section.device").count() == 0

        await page.locator("#token").fill("wrong")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#auth-error")).to_have_text("unauthorized: token refused")

        await page.locator("#token").fill("dash-token-0123456")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("body")).to_have_attribute("data-connection", "ready")
        await expect(page.locator("#auth")).to_be_hidden()
        await expect(page.locator('[data-device="sim-1"]')).to_be_visible()

        # The token stays in this tab's sessionStorage: a reload signs in by itself.
        await page.reload()
        await expect(page.locator("body")).to_have_attribute("data-connection", "ready")
        await expect(page.locator("#auth")).to_be_hidden()

        rumble = page.locator('[data-device="sim-broken"] [data-command="rumble"]')
        await rumble.get_by_role("button", name="Rumble").click()
        await expect(rumble.locator("output.result")).to_contain_text("device_error: simulated device fault")
        led = page.locator('[data-device="sim-1"] [data-command="led"]')
        await led.locator("select").select_option("2")
        await led.locator('button[data-preset="blue"]').click()
        await expect(led.locator("output.result")).to_have_attribute("data-state", "ok")
        swatch = page.locator('[data-topic="sim-1/outputs"] [data-field="leds"] .swatch-big').nth(2)
        await expect(swatch).to_have_css("background-color", "rgb(0, 0, 255)")
        assert errors == []


async def test_dashboard_reconnects_when_the_gateway_comes_back(tmp_path: Path, browser: Browser) -> None:
    http_port, msgpack_port = free_port(), free_port()
    gateway = await start_demo(tmp_path, http_port, msgpack_port)
    page, errors = await open_page(browser, gateway.base_url + "/")
    try:
        await expect(page.locator("body")).to_have_attribute("data-connection", "ready")
        assert await gateway.stop() == 0
        await expect(page.locator("#connection")).to_contain_text("going_away")
        await expect(page.locator("#connection")).to_contain_text("retrying in")
        await expect(page.locator('[data-device="sim-pad"]')).to_have_class("device stale")

        gateway = await start_demo(tmp_path, http_port, msgpack_port)
        await expect(page.locator("body")).to_have_attribute("data-connection", "ready", timeout=15000)
        await expect(page.locator('[data-device="sim-pad"]')).to_have_class("device")
        await expect(page.locator('[data-topic="sim-pad/state"]')).to_be_visible()
        assert unexpected_in_outage(errors, gateway.base_url) == []
    finally:
        assert await gateway.stop() == 0


async def test_dashboard_files_are_served_with_a_strict_policy(gateway: GatewayUnderTest) -> None:
    async with aiohttp.ClientSession() as http:
        response = await http.get(f"{gateway.base_url}/")
        page = await response.text()
        assert response.status == 200
        assert response.content_type == "text/html"
        policy = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy
        assert "script-src 'self';" in policy
        assert f"connect-src 'self' ws://127.0.0.1:{gateway.http_port} wss://127.0.0.1:{gateway.http_port};" in policy
        assert response.headers["Cache-Control"] == "no-cache"
        assert '<script type="module" src="/static/app.js"></script>' in page

        for name in ("app.js", "connection.js", "controls.js", "widgets.js", "plot.js", "dom.js"):
            script = await http.get(f"{gateway.base_url}/static/{name}")
            assert script.status == 200, name
            assert script.content_type == "text/javascript"
            assert script.headers["X-Content-Type-Options"] == "nosniff"
        style = await http.get(f"{gateway.base_url}/static/style.css")
        assert style.content_type == "text/css"
        again = await http.get(f"{gateway.base_url}/static/style.css", headers={"If-None-Match": style.headers["ETag"]})
        assert again.status == 304
        refused = ("/static/missing.js", "/static/index.html", "/static/..%2Fcli.py", "/static/%2e%2e%2fdemo.toml")
        for path in (*refused, "/static/"):
            assert (await http.get(gateway.base_url + path)).status == 404, path


# -- a scripted gateway for the device types that have no adapter yet ----------------------------------

MOTOR_TYPE = "test/MotorTarget"
MOTOR_DESCRIBED = {
    "type": MOTOR_TYPE,
    "kind": "command",
    "doc": "Wheel speed targets (a stand-in for a motor command type).",
    "schema": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "left": {"type": "integer", "minimum": -500, "maximum": 500},
            "right": {"type": "integer", "minimum": -500, "maximum": 500},
        },
    },
    "constants": {},
}
SCRIPTED_DEVICES = [
    ("wii", "wiimote", ["wiimote/State"], ["wiimote/TimedSwitch", "rumble"]),
    ("arm", "kortex", ["kortex/WristCyclicC61/Feedback"], ["kortex/WristCyclicC61/Command"]),
    (
        "thymio",
        "thymio",
        ["creos_messages/ControllerState", "thymio_msgs/Comm"],
        ["thymio_msgs/Led", "thymio_msgs/SystemSound", "thymio_msgs/Sound", MOTOR_TYPE],
    ),
]


def scripted_samples(t: float) -> list[tuple[str, Any]]:
    """What the scripted devices publish at time `t` (s)."""
    wave = math.sin(2 * math.pi * 0.5 * t)
    a_pressed = tuple(index == State.MSG_BTN_A for index in range(11))
    wii = State(
        linear_acceleration_zeroed=Vector3(wave, 0.5 * wave, 9.81),
        angular_velocity_zeroed=Vector3(0.2, -wave, 0.1),
        buttons=a_pressed,
        nunchuk_buttons=(False, True),
        LEDs=(True, False, True, False),
        ir_tracking=(
            IrSourceInfo(512 + 300 * math.cos(t), 384 + 200 * math.sin(t), 3),
            IrSourceInfo(200.0, 600.0, 1),
            IrSourceInfo(-1.0, -1.0, -1),
            IrSourceInfo(-1.0, -1.0, -1),
        ),
        raw_battery=152.0,
        percent_battery=73.0,
    )
    arm = Feedback(
        force_x=5 * wave,
        force_y=2.0,
        force_z=-3 * wave,
        torque_z=0.4 * wave,
        imu_acceleration_z=9.81 + 0.1 * wave,
        imu_angular_velocity_y=15 * wave,
        buttons_state=0b101,
        voltage=24.1,
        temperature_core=41.5,
    )
    pad = ControllerState(Time.from_seconds(t), (), (1, 0, 0, 2, 0))
    comm = Comm(value=42, payloads=(1, 2, 3, 0, 0, 0, 0), intensities=(3000, 1500, 0, 0, 0, -20, 10))
    return [("wii/state", wii), ("arm/feedback", arm), ("thymio/buttons", pad), ("thymio/comm", comm)]


class ScriptedGateway:
    """Serves the dashboard's files and the protocol ops the page uses; records commands and estops."""

    def __init__(self) -> None:
        self.commands: list[dict[str, Any]] = []
        self.estops = 0
        self.seq = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_get("/ws", self._websocket)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC_DIR / "index.html")

    async def _static(self, request: web.Request) -> web.StreamResponse:
        path = STATIC_DIR / request.match_info["name"]
        if not path.is_file():
            raise web.HTTPNotFound()
        return web.FileResponse(path)

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        if op == "list_devices":
            devices = [
                {"id": i, "kind": k, "status": "connected", "detail": "", "publishes": p, "accepts": a,
                 "topics": [], "capabilities": {}}
                for i, k, p, a in SCRIPTED_DEVICES
            ]  # fmt: skip
            return {"devices": devices}
        if op == "describe":
            if request["type"] == MOTOR_TYPE:
                return MOTOR_DESCRIBED
            info = REGISTRY[request["type"]]
            return {"type": info.name, "kind": info.kind, "doc": info.doc, "schema": schema_of(info.cls),
                    "constants": dict(info.constants)}  # fmt: skip
        if op == "subscribe":
            return {"subscription": 1, "topics": []}
        if op == "command":
            self.commands.append({"device": request["device"], "type": request["type"], "data": request["data"]})
            return {}
        if op == "estop":
            self.estops += 1
            return {"devices": [{"device": d[0], "ok": True} for d in SCRIPTED_DEVICES]}
        raise AssertionError(f"the page sent an unexpected op {op!r}")

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        hello = {"op": "hello", "server": "hwgateway", "version": "scripted", "protocol": 1, "capabilities": [],
                 "auth_required": False, "session": "s1", "limits": {}}  # fmt: skip
        await ws.send_str(orjson.dumps(hello).decode())
        pusher: asyncio.Task[None] | None = None
        try:
            async for message in ws:
                request_ = orjson.loads(message.data)
                result = {"op": "result", "id": request_["id"], "ok": True, "data": self._answer(request_)}
                await ws.send_str(orjson.dumps(result).decode())
                if request_["op"] == "subscribe" and pusher is None:
                    pusher = asyncio.create_task(self._push(ws))
        finally:
            if pusher is not None:
                pusher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pusher
        return ws

    async def _push(self, ws: web.WebSocketResponse) -> None:
        while not ws.closed:
            now = time.time()
            for topic, sample in scripted_samples(now):
                self.seq += 1
                envelope = {"op": "state", "topic": topic, "type": REGISTRY_NAME[type(sample)], "seq": self.seq,
                            "stamp": now, "recv_stamp": now, "data": to_plain(sample)}  # fmt: skip
                await ws.send_str(orjson.dumps(envelope).decode())
            await asyncio.sleep(0.05)


REGISTRY_NAME = {info.cls: name for name, info in REGISTRY.items()}


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedGateway]:
    server = ScriptedGateway()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_dashboard_widgets_and_hold_to_drive(scripted: ScriptedGateway, browser: Browser) -> None:
    page, errors = await open_page(browser, scripted.url)
    await expect(page.locator("body")).to_have_attribute("data-connection", "ready")

    # Wii Remote: IR points on a 1024×768 canvas, buttons named by MSG_BTN_*, battery.
    wii = page.locator('[data-topic="wii/state"]')
    canvas = wii.locator("canvas.ir")
    assert (await canvas.get_attribute("width"), await canvas.get_attribute("height")) == ("1024", "768")
    await expect(wii.locator(".pill.on")).to_have_text(["A", "C"])
    await expect(wii.locator(".value .num").first).to_have_text("73")
    # The IR point seen at (200, 600) is drawn there in yellow.
    pixel = await canvas.evaluate("c => [...c.getContext('2d').getImageData(200, 600, 1, 1).data]")
    assert pixel == [0xFD, 0xE0, 0x47, 255]
    # Kortex feedback: four plots; Thymio: buttons (1 pressed, 2 long press) and a generic Comm view.
    await expect(page.locator('[data-topic="arm/feedback"] figure.plot')).to_have_count(4)
    await expect(page.locator('[data-topic="thymio/buttons"] .pill.on')).to_have_text(["b0"])
    await expect(page.locator('[data-topic="thymio/buttons"] .pill.long')).to_have_text(["b3"])
    await expect(page.locator('[data-topic="thymio/comm"] [data-field="payloads"] .bar')).to_have_count(7)

    thymio = page.locator('[data-device="thymio"]')
    await thymio.locator('[data-command="thymio_msgs/SystemSound"]').get_by_role("button", name="startup").click()
    leds = thymio.locator('[data-command="thymio_msgs/Led"]')
    await leds.locator("select").select_option(label="buttons")
    await expect(leds.locator("input[type=range]")).to_have_count(4)
    await leds.get_by_role("button", name="All on").click()
    await expect(leds.locator("output.result")).to_have_attribute("data-state", "ok")

    arm = page.locator('[data-device="arm"] [data-command="kortex/WristCyclicC61/Command"]')
    await arm.locator('label:has-text("led_ring_rgb") input[type=color]').fill("#00ff00")
    await arm.locator('label:has-text("led_ring_blink_frequency") input').fill("2")
    await arm.get_by_role("button", name="Send").click()
    await expect(arm.locator("output.result")).to_have_attribute("data-state", "ok")

    # Hold to drive: the motor command goes out repeatedly while held, then once zeroed on release.
    motor = thymio.locator(f'[data-command="{MOTOR_TYPE}"]')
    await motor.locator('label:has-text("left") input').fill("200")
    await motor.locator('label:has-text("right") input').fill("-150")
    await motor.get_by_role("button", name="Hold to drive").hover()
    await page.mouse.down()
    await page.wait_for_timeout(700)
    await page.mouse.up()
    await expect(motor.locator("output.result")).to_contain_text("stop sent")
    driven = [c["data"] for c in scripted.commands if c["type"] == MOTOR_TYPE]
    assert len(driven) >= 4
    assert driven[:-1] == [{"left": 200, "right": -150}] * (len(driven) - 1)
    assert driven[-1] == {"left": 0, "right": 0}
    await page.wait_for_timeout(300)
    assert len([c for c in scripted.commands if c["type"] == MOTOR_TYPE]) == len(driven)

    await page.locator("#estop").click()
    await expect(page.locator("#estop-result")).to_have_text("✓ stopped wii, arm, thymio")
    assert scripted.estops == 1

    # The page reads a Thymio's gw.* variables back after each command; those reads are not commands sent.
    read_back = {c["data"]["variable"] for c in scripted.commands if c["type"] == "asebaros_msgs/GetVariable"}
    assert "gw.led_top" in read_back
    others = [c for c in scripted.commands if c["type"] not in (MOTOR_TYPE, "asebaros_msgs/GetVariable")]
    assert others == [
        {"device": "thymio", "type": "thymio_msgs/SystemSound", "data": {"sound": 0}},
        {"device": "thymio", "type": "thymio_msgs/Led", "data": {"id": 2, "values": [1, 1, 1, 1]}},
        {
            "device": "arm",
            "type": "kortex/WristCyclicC61/Command",
            "data": {
                "command_id": {"identifier": 0},
                "flags": 0,
                "digital_outputs_state": 0,
                "analog_output_a_channel_1_value": 0,
                "analog_output_a_channel_2_value": 0,
                "analog_output_b_channel_1_value": 0,
                "analog_output_b_channel_2_value": 0,
                "led_ring_rgb": 0x00FF00,
                "led_ring_blink_frequency": 2,
            },
        },
    ]
    await screenshot(page, "dashboard-widgets.png")
    assert errors == []


DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}
LATE_DEVICE = '[devices.sim-1]\nkind = "sim"\n[devices.late]\nkind = "sim"\nconnect_delay_s = 600.0\n'


async def page_at(browser: Browser, url: str, viewport: ViewportSize) -> tuple[Page, list[str]]:
    """A page at `url` in a window of `viewport`, with its console errors."""
    page = await browser.new_page(viewport=viewport)
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"exception: {error}"))
    await page.goto(url)
    await expect(page.locator("body")).to_have_attribute("data-connection", "ready")
    return page, errors


async def watcher_command(gateway: GatewayUnderTest, device: str, type_name: str, data: dict[str, Any]) -> None:
    """Send one command from a separate client (the page only watches)."""
    client = await connect(gateway, "ws")
    try:
        await client.ok("command", device=device, type=type_name, data=data)
    finally:
        await client.close()


async def document_width(page: Page) -> int:
    width: int = await page.evaluate("document.documentElement.scrollWidth")
    return width


async def test_dashboard_reads_well_on_a_desktop_and_a_phone(tmp_path: Path, browser: Browser) -> None:
    gateway = await start_demo(tmp_path, free_port(), free_port())
    try:
        for viewport in (DESKTOP, PHONE):
            page, errors = await page_at(browser, gateway.base_url + "/", viewport)
            # Every demo device has shown its main stream, so the page is as wide as it gets (the arm's
            # cyclic process may take more than 5 s to start on a loaded host).
            await expect(page.locator('[data-topic="arm-demo/actuators"] tbody tr')).not_to_have_count(0, timeout=20000)
            await expect(page.locator('[data-topic="wiimote-demo/state"]')).to_be_visible()
            await expect(page.locator('[data-topic="thymio-demo/node/1/state"]')).to_be_visible()
            await page.wait_for_timeout(500)
            size = f"{viewport['width']}x{viewport['height']}"
            await screenshot(page, f"dashboard-demo-{size}.png")
            assert await document_width(page) <= viewport["width"], f"horizontal overflow at {size}"
            assert errors == []
            await page.close()

        page, errors = await page_at(browser, gateway.base_url + "/", DESKTOP)
        # A connected device's detail is information, not an error: not red.
        arm_detail = page.locator('[data-device="arm-demo"] > .detail')
        await expect(arm_detail).to_have_attribute("data-severity", "info")
        assert await arm_detail.evaluate("el => getComputedStyle(el).color") != "rgb(220, 38, 38)"
        # Units: the remote's battery in %; the arm's joints as a table, one plot per quantity.
        await expect(page.locator('[data-topic="wiimote-demo/state"] .row small').first).to_have_text("%")
        joints = page.locator('[data-topic="arm-demo/actuators"] table.joints')
        await expect(joints.locator("thead th")).to_have_text(
            ["joint", "position °", "velocity °/s", "torque N·m", "current A"]
        )
        await expect(page.locator('[data-topic="arm-demo/actuators"] .plot figcaption')).to_have_count(4)

        # Each device names its own controller buttons (list_devices capabilities.controller).
        thymio_buttons = page.locator('[data-topic="thymio-demo/node/1/buttons"] .pill')
        await expect(thymio_buttons).to_have_text(["backward", "left", "center", "forward", "right"])
        wii_buttons = page.locator('[data-topic="wiimote-demo/controller"] .pill')
        await expect(wii_buttons.first).to_have_text("1")
        await expect(wii_buttons.nth(10)).to_have_text("Home")
        await expect(page.locator('[data-topic="gamepad-demo/state"] .pill').first).to_have_text("✕")
        # The Thymio's sensors as named bars; the arm's LED ring as a colour.
        sensors = page.locator('[data-topic="thymio-demo/node/1/state"] .named-bar')
        await expect(sensors).to_have_count(9)
        await expect(sensors.nth(2).locator(".key")).to_have_text("front centre")
        await watcher_command(gateway, "arm-demo", "led", {"rgb": [1, 0.5, 0]})
        ring = page.locator('[data-topic="arm-demo/wrist/command"] [data-value="led_ring"]')
        await expect(ring).to_have_css("background-color", "rgb(255, 128, 0)")

        # The Thymio's LED and tone as the robot holds them after a command (GetVariable of gw.*).
        thymio = page.locator('[data-device="thymio-demo"]')
        await thymio.locator('[data-command="led"] button[data-preset="red"]').click()
        await expect(thymio.locator('[data-readback="gw.led_top"] .text')).to_have_text("32, 0, 0 of 32")
        await thymio.locator('[data-command="sound"]').get_by_role("button", name="Play").click()
        await expect(thymio.locator('[data-readback="gw.sound"] .text')).to_have_text("440 Hz for 0.50 s")

        # hwgateway/WiimoteLeds: one choice per LED, numbered as on the remote.
        leds = page.locator('[data-device="wiimote-demo"] [data-command="hwgateway/WiimoteLeds"]')
        await leds.locator('select[data-led="2"]').select_option("on")
        await leds.locator('select[data-led="1"]').select_option("off")
        await leds.get_by_role("button", name="Send").click()
        await expect(leds.locator("output.result")).to_have_attribute("data-state", "ok")
        lamps = page.locator('[data-topic="wiimote-demo/state"] .row .lamp')
        await expect(lamps.nth(1)).to_have_class("lamp on")
        await expect(lamps.nth(0)).to_have_class("lamp")

        # A filter and collapsible cards keep the demo's devices from being a page of thousands of pixels.
        # ("thymio" alone matches the demo's binding drive-thymio too: a binding is a device.)
        await page.locator("#filter").fill("thymio-demo")
        await expect(page.locator("section.device:visible")).to_have_count(1)
        await expect(page.locator("#shown")).to_have_text(f"1 of {DEMO_DEVICES} devices")
        await page.locator("#filter").fill("")
        await expect(page.locator("section.device:visible")).to_have_count(DEMO_DEVICES)
        await page.get_by_role("button", name="Collapse all").click()
        await expect(page.locator("section.device .body:visible")).to_have_count(0)
        assert await page.evaluate("document.documentElement.scrollHeight") < 1000
        await screenshot(page, "dashboard-demo-collapsed-1280x800.png")
        await page.reload()  # remembered in this browser
        await expect(page.locator("section.device.collapsed")).to_have_count(DEMO_DEVICES)
        await page.get_by_role("button", name="Expand all").click()
        await expect(page.locator("section.device.collapsed")).to_have_count(0)

        # The gateway goes away: nobody knows how the devices are, and their controls are off.
        assert await gateway.stop() == 0
        await expect(page.locator("section.device .status")).to_have_text(["unknown"] * DEMO_DEVICES)
        await expect(page.locator('[data-device="sim-pad"] .controls button').first).to_be_disabled()
        await expect(page.locator('[data-device="sim-pad"] .disabled-reason')).to_have_text(
            "Commands are off: no connection to the gateway."
        )
        assert unexpected_in_outage(errors, gateway.base_url) == []
    finally:
        if gateway.proc.returncode is None:
            assert await gateway.stop() == 0


async def test_dashboard_disables_the_controls_of_a_device_that_is_not_connected(
    tmp_path: Path, browser: Browser
) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, LATE_DEVICE)) as gateway:
        page, errors = await page_at(browser, gateway.base_url + "/", PHONE)
        late = page.locator('[data-device="late"]')
        await expect(late.locator(".status")).to_have_text("connecting")
        await expect(late.locator(".controls button").first).to_be_disabled()
        await expect(late.locator(".disabled-reason")).to_have_text("Commands are off: the device is connecting.")
        await expect(page.locator('[data-device="sim-1"] .controls button').first).to_be_enabled()
        await expect(page.locator('[data-device="sim-1"] .disabled-reason')).to_be_hidden()
        assert await document_width(page) <= PHONE["width"]
        assert errors == []


async def test_a_device_lock_shows_on_its_card(tmp_path: Path, browser: Browser) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path)) as gateway:
        holder = await connect(gateway, "tcp")
        page, errors = await open_page(browser, f"{gateway.base_url}/")
        card = page.locator('section.device[data-device="sim-1"]')
        await expect(card.locator(".status")).to_have_text("connected")
        await expect(card.locator(".lock")).to_be_hidden()
        await holder.ok("lock", device="sim-1")
        session = holder.hello["session"]
        await expect(card.locator(".lock")).to_have_text(f"locked by {session}")
        await holder.close()  # the lock ends with its client
        await expect(card.locator(".lock")).to_be_hidden()
        assert errors == []
        await page.close()


THYMIO_DEVICE = '[devices.thymio]\nkind = "aseba"\nsimulate = true\n'
#: A script that emits `ping` (declared 2 words) every 50 ms.
PING_SCRIPT = "timer.period[0] = 50\n\nonevent timer0\n  emit ping [7, -3]\n"


async def test_aseba_event_words_are_labelled_from_the_scripts_event_sizes(tmp_path: Path, browser: Browser) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, THYMIO_DEVICE)) as gateway:
        page, errors = await page_at(browser, gateway.base_url + "/", DESKTOP)
        # The gateway's own program: each word of its `state` event named after what it holds.
        state = page.locator('[data-topic="thymio/node/1/events/state"]')
        keys = state.locator(".event-words .key")
        await expect(keys).to_have_count(20)
        await expect(keys.nth(0)).to_have_text("button.backward")
        await expect(keys.nth(5)).to_have_text("prox.horizontal[0]")
        await expect(keys.nth(19)).to_have_text("motor.right.speed")
        await expect(state.locator(".event-size")).to_have_text("20 of 20 declared words")

        # A script loaded after the page listed the device: its event's words from its declared size.
        client = await connect(gateway, "ws")
        try:
            spec = {"source": PING_SCRIPT, "events": [{"name": "ping", "size": 2}], "load": True}
            compiled = await client.ok("command", device="thymio", type="hwgateway/AsebaCompile", data=spec)
            assert compiled["ok"], compiled
            await client.ok("command", device="thymio", type="hwgateway/AsebaVMControl", data={"command": "run"})
        finally:
            await client.close()
        ping = page.locator('[data-topic="thymio/node/1/events/ping"]')
        await expect(ping.locator(".event-words .key")).to_have_text(["ping[0]", "ping[1]"])
        await expect(ping.locator(".event-words .num")).to_have_text(["7", "-3"])
        await expect(ping.locator(".event-size")).to_have_text("2 of 2 declared words")
        await screenshot(page, "dashboard-aseba-events-1280x800.png")
        assert errors == []
        await page.close()


SIM_REMOTE = '[devices.wiimote-demo]\nkind = "wiimote"\ntransport = "sim"\nsim_extension = "nunchuk"\n'


async def test_the_dashboard_presses_the_buttons_of_a_simulated_remote(tmp_path: Path, browser: Browser) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, SIM_REMOTE)) as gateway:
        watcher = await connect(gateway, "ws")
        await watcher.ok("subscribe", topics=["wiimote-demo/state"])
        page, errors = await open_page(browser, gateway.base_url + "/")
        await expect(page.locator('[data-device="wiimote-demo"] .status')).to_have_text("connected")
        buttons = page.locator('[data-device="wiimote-demo"] [data-command="hwgateway/SimButton"]')
        names = await buttons.locator("button[data-button]").evaluate_all("all => all.map(b => b.dataset.button)")
        assert names == ["A", "B", "1", "2", "+", "-", "HOME", "UP", "DOWN", "LEFT", "RIGHT", "Z", "C"]
        await buttons.locator('button[data-button="HOME"]').click()
        await expect(buttons.locator("output.result")).to_have_attribute("data-state", "ok")
        await watcher.wait_for(
            lambda m: m.get("op") == "state" and m["data"]["buttons"][State.MSG_BTN_HOME], timeout=10
        )
        await buttons.locator('button[data-button="C"]').click()
        await watcher.wait_for(
            lambda m: m.get("op") == "state" and m["data"]["nunchuk_buttons"][State.MSG_BTN_C], timeout=10
        )
        await watcher.close()
        assert errors == []
