"""Is there a Kinova arm at this address? A session on its TCP port (10000), opened and closed again.

An arm is never found by itself (it answers no broadcast): `hwgateway scan --kortex HOST[:PORT]`
asks one address with the given credentials (the factory's are admin / admin). The API version is
told by the arm's answer to GetCurrentOperatingMode, which only Kortex 3 (Link 6) has. Nothing is
moved: a session is created, one read-only call is made, and the session is closed.
"""

from __future__ import annotations

import contextlib

from devices.kortex.connection import KortexConnection
from devices.kortex.errors import KortexRequestError, KortexTimeout, LinkLost
from devices.kortex.transport import open_tcp
from gateway.core.discovery import Finding, slug
from protocols.kortex.services import Function

#: The arm's RPC port (TCP).
DEFAULT_PORT = 10000
#: Milliseconds the probe's session lives without a request (it is closed at once anyway).
_PROBE_SESSION_MS = 10_000


def parse_address(text: str) -> tuple[str, int]:
    """`HOST` or `HOST:PORT` -> (host, port); `ValueError` naming what is wrong."""
    host, port = text, DEFAULT_PORT
    if text.count(":") == 1:
        host, _, port_text = text.partition(":")
        try:
            port = int(port_text)
        except ValueError:
            raise ValueError(f"--kortex {text!r}: the port {port_text!r} is not a number") from None
    if not host or not 1 <= port <= 65535:
        raise ValueError(f"--kortex {text!r}: expected HOST or HOST:PORT (port 1-65535)")
    return host, port


async def probe_arm(address: str, username: str, password: str, timeout_s: float) -> Finding:
    """A finding for the arm at `address` (HOST[:PORT]); it carries a note when nothing answered there."""
    host, port = parse_address(address)
    name = "kortex-" + slug(host)
    options: dict[str, object] = {"host": host, "username": username, "password": password, "transport": "tcp"}
    if port != DEFAULT_PORT:
        options["tcp_port"] = port
    connection = KortexConnection(f"scan {host}:{port}", api="kortex3", rpc_timeout_s=timeout_s)
    try:
        await open_tcp(connection, host, port, timeout_s)
    except (OSError, TimeoutError) as error:
        why = f"nothing answers on {host}:{port}: {error or type(error).__name__}"
        return Finding("kortex", name, f"{host}:{port}", why, options, ("host",), (why,))
    try:
        try:
            await connection.create_session(username, password, _PROBE_SESSION_MS, _PROBE_SESSION_MS)
        except (KortexRequestError, KortexTimeout, LinkLost) as error:
            why = f"an arm answers on {host}:{port} but refused the session: {error}"
            return Finding("kortex", name, f"{host}:{port}", why, options, ("host",), ("check username and password",))
        try:
            await connection.call(Function.BASE_GET_CURRENT_OPERATING_MODE)
        except (KortexRequestError, KortexTimeout):  # Kortex 2 has no such function
            api = "kortex2"
        else:
            api = "kortex3"
        options["api"] = api
        arm = "Link 6 (Kortex 3)" if api == "kortex3" else "Gen3 (Kortex 2)"
        return Finding("kortex", name, f"{host}:{port}", f"Kinova {arm} arm at {host}:{port}", options, ("host",))
    finally:
        with contextlib.suppress(Exception):
            await connection.close_session(timeout_s)
        connection.close()
