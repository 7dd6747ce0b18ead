"""A plain page in Debian's Chromium (Playwright) opens the Foxglove port as the Foxglove app does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web
from playwright.async_api import Browser

from tests.foxglove_rig import foxglove_url
from tests.harness import free_port, gateway_config
from tests.inprocess import start_in_process
from tests.test_dashboard import browser, open_page

__all__ = ["browser"]  # the Chromium fixture

PAGE = """<!doctype html><meta charset="utf-8"><title>foxglove</title><link rel="icon" href="data:,"><script>
const ws = new WebSocket(URL_HERE, ["foxglove.websocket.v1"]);
ws.binaryType = "arraybuffer";
ws.onmessage = (event) => {
  if (typeof event.data === "string") {
    const message = JSON.parse(event.data);
    const channel = message.op === "advertise" && message.channels.find((c) => c.topic === "/sim-1/state");
    if (channel) ws.send(JSON.stringify({op: "subscribe", subscriptions: [{id: 42, channelId: channel.id}]}));
    return;
  }
  const view = new DataView(event.data);
  window.result = {
    protocol: ws.protocol, opcode: view.getUint8(0), subscription: view.getUint32(1, true),
    timestamp: view.getBigUint64(5, true).toString(),
    data: JSON.parse(new TextDecoder().decode(new Uint8Array(event.data, 13))),
  };
};
</script>"""


async def test_a_browser_receives_message_data(browser: Browser, tmp_path: Path) -> None:
    page_port = free_port()
    origin = f"http://127.0.0.1:{page_port}"
    extra = "\n[foxglove]\nenabled = true\nport = 0\n"
    config = gateway_config(tmp_path, server=f'allowed_origins = ["{origin}"]', extra=extra)
    gateway = await start_in_process(tmp_path, config)
    app = web.Application()
    html = PAGE.replace("URL_HERE", json.dumps(foxglove_url(gateway)))

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    app.router.add_get("/", index)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", page_port).start()
    try:
        page, errors = await open_page(browser, origin + "/")
        await page.wait_for_function("window.result !== undefined", timeout=10000)
        result: dict[str, Any] = await page.evaluate("window.result")
        assert result["protocol"] == "foxglove.websocket.v1"
        assert (result["opcode"], result["subscription"]) == (1, 42)
        assert int(result["timestamp"]) > 10**18
        assert {"buttons", "axes"} <= set(result["data"])
        assert errors == []
    finally:
        await runner.cleanup()
        assert await gateway.stop() == 0
