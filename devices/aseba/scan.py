"""Finding Thymio robots and wireless dongles on serial ports: each port's nodes, asked for their description.

By default only the ports whose USB ids are a Thymio's or a dongle's (0617:000A, 0617:000C) are
opened: opening any other serial port could reset the board behind it (an Arduino does). Other
ports (a UART, a socat pseudo-terminal) are asked when named. A dongle with no robot switched on
answers nothing: it is reported with that note.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable

from serial.tools import list_ports  # type: ignore[import-untyped]  # pyserial ships no stubs

from devices.aseba.network import AsebaNetwork, NodeState
from devices.aseba.transport import THYMIO_PRODUCT_IDS, THYMIO_VENDOR_ID, Target, open_link
from gateway.core.discovery import Finding, slug

log = logging.getLogger(__name__)

#: USB product id of the Thymio wireless dongle.
DONGLE_PRODUCT_ID = 0x000C
#: Seconds between ListNodes while scanning, and the quiet after the last new node before a port is done.
LIST_PERIOD_S = 0.3
SETTLE_S = 0.8


def thymio_ports() -> dict[str, bool]:
    """The serial ports of plugged-in Thymios and dongles: path -> True for a dongle."""
    return {
        port.device: port.pid == DONGLE_PRODUCT_ID
        for port in sorted(list_ports.comports(), key=lambda p: p.device)
        if port.vid == THYMIO_VENDOR_ID and port.pid in THYMIO_PRODUCT_IDS
    }


async def scan_serial(extra_ports: Iterable[str], timeout_s: float) -> list[Finding]:
    """Ask every Thymio port, and each of `extra_ports`, for its nodes; one finding per port, within `timeout_s` s."""
    ports = thymio_ports()
    for path in extra_ports:
        ports.setdefault(path, False)
    found = await asyncio.gather(*(_scan_port(path, dongle, timeout_s) for path, dongle in ports.items()))
    return [finding for finding in found if finding is not None]


async def _scan_port(path: str, dongle: bool, timeout_s: float) -> Finding | None:
    try:
        nodes = await _nodes_of(path, timeout_s)
    except (OSError, TimeoutError, ConnectionError) as error:
        log.info("scan: %s: %s", path, error)
        return Finding(
            "aseba",
            "thymio-" + slug(path.rsplit("/", 1)[-1]),
            path,
            f"serial port {path}: cannot be opened",
            {"target": f"ser:device={path}"},
            ("target",),
            (f"{error or type(error).__name__}: is it in use, or does the user lack the dialout group?",),
        )
    described = [node for node in nodes if node.description is not None]
    if not described and not dongle:
        return None  # a port with no Aseba node behind it: not a Thymio
    target = f"ser:device={path}"
    names = ", ".join(f"{node.name or 'node'} {node.id}" for node in sorted(described, key=lambda n: n.id))
    what = "Thymio wireless dongle" if dongle or len(described) > 1 else "Thymio"
    notes: list[str] = []
    if not described:
        notes.append("no robot answered: switch a robot on (paired with this dongle) and scan again")
    options: dict[str, object] = {"target": target}
    if len(described) > 1:
        options["node_id"] = min(node.id for node in described)
        notes.append("several nodes on one link: node_id picks the one whose state is published")
    return Finding(
        "aseba",
        "thymio-" + slug(path.rsplit("/", 1)[-1]),
        path,
        f"{what} on {path}" + (f": {names}" if names else ""),
        options,
        ("target",),
        tuple(notes),
    )


async def _nodes_of(path: str, timeout_s: float) -> list[NodeState]:
    """Open `path`, list its nodes and their descriptions until quiet or `timeout_s` s, close it."""
    async with asyncio.timeout(timeout_s):
        reader, writer = await open_link(Target("serial", device=path))
    changed = [time.monotonic()]
    network = AsebaNetwork(
        reader,
        writer,
        on_node=lambda _node: changed.append(time.monotonic()),
        on_event=lambda _event: None,
        list_nodes_period_s=LIST_PERIOD_S,
    )
    serving = asyncio.create_task(network.serve(), name=f"scan:{path}")
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and not serving.done():
            nodes = list(network.nodes.values())
            settled = time.monotonic() - changed[-1] >= SETTLE_S
            if nodes and settled and all(node.description is not None for node in nodes):
                break
            await asyncio.sleep(0.05)
        return list(network.nodes.values())
    finally:
        serving.cancel()
        with contextlib.suppress(BaseException):
            await serving
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
