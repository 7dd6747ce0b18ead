"""roslib and Lichtblick's roslibjs, from npm unchanged, in a web page of another origin, on the demo's defaults.

Users host their roslibjs pages on a server of their own, so the page here comes from a loopback
HTTP server on another port (an origin the shipped defaults admit; no `allowed_origins` is set).
roslib 2.1.0 and Lichtblick's message parser and reader are bundled by esbuild for the browser (as
a web app bundles them); @lichtblick/roslibjs 1.0.0 is its own browser build, by a script tag. One
page makes every rosapi call of Lichtblick's (and Foxglove Studio's) Rosbridge source and of
roslib's helpers, and subscribes, on both rosbridge endpoints (its own port and the HTTP port's
`/rosbridge`) at once, in one `evaluate` (tests/node/rosbridge/browser_calls.mjs). The same calls
from Node are tests/test_rosbridge_rosapi.py's.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from playwright.async_api import Browser
from playwright.async_api import TimeoutError as PlaywrightTimeout

from tests.harness import GatewayUnderTest, devices_connected, free_port, gateway_config
from tests.inprocess import running_gateway
from tests.rosbridge_rig import rosbridge_url
from tests.test_dashboard import browser, open_page
from tests.test_rosbridge_clients import ROSLIB_DIR, node, run_program

__all__ = ["browser"]  # the fixture, shared

TOPIC = "/wiimote/state"
TYPE = "wiimote/State"
SERVICE = "/thymio/aseba/get_variable"
SERVICE_TYPE = "asebaros_msgs/GetVariable"

#: esbuild from the package's lock, as a web app bundles roslib.
ESBUILD = ROSLIB_DIR / "node_modules" / ".bin" / "esbuild"

PAGE = """<!doctype html><meta charset="utf-8"><title>roslib</title><link rel="icon" href="data:,">
<script src="/roslibjs.js"></script>
<script type="module" src="/bundle.js"></script>"""


@dataclass(frozen=True)
class PageServer:
    """The page's server: its `origin` (`http://127.0.0.1:<port>`) and esbuild's run of its bundle."""

    origin: str
    bundled: asyncio.Task[tuple[int, str, str]]


@pytest.fixture
async def page_server(tmp_path: Path) -> AsyncIterator[PageServer]:
    """A server of the page, its bundle and Lichtblick's roslibjs build; esbuild runs while the rest starts."""
    node()  # node_modules installed (or the test fails under HWGW_REQUIRE_PEERS)
    bundle = tmp_path / "bundle.js"
    bundled = asyncio.create_task(
        run_program(
            str(ESBUILD),
            str(ROSLIB_DIR / "browser_calls.mjs"),
            "--bundle",
            "--format=esm",
            "--platform=browser",
            "--log-level=warning",
            f"--outfile={bundle}",
        )
    )
    files = {"/bundle.js": bundle, "/roslibjs.js": ROSLIB_DIR / "node_modules/@lichtblick/roslibjs/build/roslib.js"}

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def script(request: web.Request) -> web.FileResponse:
        return web.FileResponse(files[request.path], headers={"Content-Type": "text/javascript"})

    app = web.Application()
    app.router.add_get("/", index)
    for path in files:
        app.router.add_get(path, script)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield PageServer(f"http://127.0.0.1:{port}", bundled)
    finally:
        await bundled
        await runner.cleanup()


@pytest.fixture
async def viewers_demo(tmp_path: Path) -> AsyncIterator[GatewayUnderTest]:
    """The demo's Wii Remote and Thymio (the topic and the service the page uses) behind rosbridge, defaults else."""
    text = resources.files("gateway").joinpath("demo.toml").read_text(encoding="utf-8")
    tables = re.split(r"(?m)^(?=\[)", text)
    devices = "".join(t for t in tables if t.startswith(("[devices.wiimote-demo]", "[devices.thymio-demo]")))
    config = gateway_config(tmp_path, devices=devices, extra="[rosbridge]\nenabled = true\nport = 0\n")
    async with running_gateway(tmp_path, config) as running:
        await devices_connected(running, ("wiimote-demo", "thymio-demo"))
        yield running


def check_endpoint(endpoint: dict[str, Any]) -> None:
    """What both clients saw on one endpoint."""
    lichtblick, roslib = endpoint["lichtblick"], endpoint["roslib"]
    # Lichtblick's source: topics with types and full definitions, its graph, a service's type, raw bytes.
    listed = lichtblick["topicsAndRawTypes"]
    assert len(listed["topics"]) == len(listed["types"]) == len(listed["typedefs_full_text"])
    topics = dict(zip(listed["topics"], listed["types"], strict=True))
    assert topics[TOPIC] == TYPE
    assert "/hwgateway" in lichtblick["nodes"]
    assert set(lichtblick["nodeDetails"]) == set(lichtblick["nodes"])
    assert TOPIC in lichtblick["nodeDetails"]["/hwgateway"]["publications"]
    assert SERVICE in lichtblick["nodeDetails"]["/hwgateway"]["services"]
    assert "/rosapi/topics_and_raw_types" in lichtblick["nodeDetails"]["/rosapi"]["services"]
    assert lichtblick["serviceType"] == SERVICE_TYPE
    assert lichtblick["raw"]["byteLength"] > 0
    assert lichtblick["raw"]["secs"] > 1.7e9
    assert set(lichtblick["parsed"]) == set(topics)
    assert lichtblick["parsed"][TOPIC] > 1  # the type and its nested messages
    assert {"header", "buttons", "angular_velocity_zeroed"} <= set(lichtblick["raw"]["message"])

    # roslib's helpers.
    assert roslib["topics"]["topics"] == list(topics)
    assert roslib["topics"]["types"] == list(topics.values())
    assert roslib["topicType"] == TYPE
    assert TOPIC in roslib["topicsForType"]
    assert SERVICE in roslib["services"]
    assert roslib["serviceType"] == SERVICE_TYPE
    assert SERVICE in roslib["servicesForType"]
    assert roslib["requestDetails"]["typedefs"][0]["fieldnames"] == ["variable"]
    assert "data" in roslib["responseDetails"]["typedefs"][0]["fieldnames"]
    assert roslib["nodes"] == lichtblick["nodes"]
    assert TOPIC in roslib["nodeDetails"]["publishing"]
    assert "/hwgateway/version" in roslib["params"]
    assert roslib["actionServers"] == []
    assert roslib["topicsAndRawTypes"] == listed
    details = {typedef["type"]: typedef for typedef in roslib["messageDetails"]}
    assert "header" in details[TYPE]["fieldnames"]
    assert "std_msgs/Header" in details
    assert roslib["publishers"] == ["/hwgateway"]
    assert isinstance(roslib["paramGet"], str)
    assert "read-only" in roslib["paramSet"]["refused"]
    assert "read-only" in roslib["paramDelete"]["refused"]
    assert {"header", "buttons", "angular_velocity_zeroed"} <= set(roslib["message"])


async def test_a_page_of_another_origin_makes_every_rosapi_call_and_subscribes(
    page_server: PageServer, viewers_demo: GatewayUnderTest, browser: Browser
) -> None:
    code, out, err = await page_server.bundled
    assert code == 0, f"{out}\n{err}"
    urls = [rosbridge_url(viewers_demo), f"ws://127.0.0.1:{viewers_demo.http_port}/rosbridge"]
    page, errors = await open_page(browser, page_server.origin + "/")
    try:
        await page.wait_for_function("window.run !== undefined && window.roslib !== undefined", timeout=20000)
    except PlaywrightTimeout:
        pytest.fail(f"the page did not load its modules: {errors}")
    names = {"topic": TOPIC, "service": SERVICE, "messageType": TYPE, "serviceType": SERVICE_TYPE, "rawTopic": TOPIC}
    report: dict[str, Any] = await page.evaluate("([urls, names]) => window.run(urls, names)", [urls, names])
    assert report["errors"] == [], report["errors"]
    assert [endpoint["url"] for endpoint in report["endpoints"]] == urls
    for endpoint in report["endpoints"]:
        check_endpoint(endpoint)
    assert errors == [], errors
