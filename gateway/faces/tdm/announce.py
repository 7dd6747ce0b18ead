"""Announcing the TDM face over zeroconf (mDNS / DNS-SD), as the real Thymio Device Manager does.

Thymio Suite and tdmclient browse `_mobsya._tcp.local.`: the service's SRV port is the TCP port,
its TXT records `uuid` (Thymio Suite ignores a service without one, and keeps one connection per
uuid) and `ws-port` (the WebSocket port the Suite's web apps use). The real TDM advertises no
password, neither does this. The `zeroconf` package (python-zeroconf) is an optional extra: when it
is missing the face runs and logs why it is not announced.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

log = logging.getLogger(__name__)

SERVICE_TYPE = "_mobsya._tcp.local."
#: Longest DNS-SD instance name (bytes of UTF-8): one DNS label.
MAX_INSTANCE_BYTES = 63
_NAMESPACE = uuid.UUID("5d1b7c3e-2f4a-4e8b-9c61-0a7d3e5f8b24")


def instance_name(hostname: str) -> str:
    """The service's instance name on `hostname`, cut to one DNS label (whole characters only)."""
    name = f"Thymio Device Manager (hwgateway) on {hostname}"
    while len(name.encode()) > MAX_INSTANCE_BYTES:
        name = name[:-1]
    return name


def service_uuid(hostname: str, tcp_port: int) -> str:
    """The `uuid` TXT record: the same for this host and port on every run, so Thymio Suite sees one TDM."""
    return str(uuid.uuid5(_NAMESPACE, f"tdm/{hostname}/{tcp_port}"))


def txt_records(hostname: str, tcp_port: int, ws_port: int) -> dict[str, str]:
    """The TXT records Thymio Suite and tdmclient read: `uuid` and `ws-port` (decimal)."""
    return {"uuid": service_uuid(hostname, tcp_port), "ws-port": str(ws_port)}


def addresses_for(host: str) -> list[str]:
    """The addresses to announce for a listener bound to `host` (a wildcard: every interface's)."""
    try:
        bound = ipaddress.ip_address(host)
    except ValueError:  # a host name: the addresses it resolves to
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        return sorted({str(info[4][0]) for info in infos})
    if not bound.is_unspecified:
        return [str(bound)]
    import ifaddr  # python-zeroconf's own dependency, for the interfaces' addresses

    found: set[str] = set()
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if bound.version == 4 and isinstance(ip.ip, str):
                found.add(ip.ip)
            elif bound.version == 6 and not isinstance(ip.ip, str) and not ip.ip[0].startswith("fe80"):
                found.add(ip.ip[0])  # link-local addresses need a scope no A/AAAA record carries
    return sorted(found)


class Announcer:
    """The `_mobsya._tcp` service of one TDM face, registered while the face listens."""

    def __init__(self, host: str, tcp_port: int, ws_port: int) -> None:
        self.host = host
        self.tcp_port = tcp_port
        self.ws_port = ws_port
        self._zeroconf: AsyncZeroconf | None = None
        self._info: AsyncServiceInfo | None = None
        self._registering: asyncio.Task[bool] | None = None

    def start(self) -> None:
        """Begin registering in the background (mDNS probes for about a second before announcing)."""
        self._registering = asyncio.create_task(self.register(), name="tdm-zeroconf")

    async def register(self) -> bool:
        """Register the service; False (and a log line saying why) when it cannot be announced."""
        try:
            from zeroconf import InterfaceChoice, IPVersion
            from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf
        except ImportError:
            log.warning(
                "tdm face: not announced over zeroconf: the python-zeroconf package is not installed "
                "(install the gateway with its 'zeroconf' extra: pip install 'hwgateway[zeroconf]')"
            )
            return False
        hostname = _short_hostname()
        try:
            addresses = await asyncio.to_thread(addresses_for, self.host)  # a host name is resolved
        except OSError as error:
            addresses, why = [], str(error)
        else:
            why = "no interface has an address"
        if not addresses:
            log.warning("tdm face: not announced over zeroconf: no address for %s (%s)", self.host, why)
            return False
        versions = {ipaddress.ip_address(a).version for a in addresses}
        ip_version = IPVersion.All if versions == {4, 6} else IPVersion.V6Only if versions == {6} else IPVersion.V4Only
        interfaces: Any = InterfaceChoice.All if _is_wildcard(self.host) else addresses
        info = AsyncServiceInfo(
            SERVICE_TYPE,
            f"{instance_name(hostname)}.{SERVICE_TYPE}",
            port=self.tcp_port,
            properties=txt_records(hostname, self.tcp_port, self.ws_port),
            server=f"{hostname}.local.",
            parsed_addresses=addresses,
        )
        zeroconf: AsyncZeroconf | None = None
        try:
            zeroconf = AsyncZeroconf(interfaces=interfaces, ip_version=ip_version)
            # The first await queues the registration; the second waits for its announcements.
            await (await zeroconf.async_register_service(info, allow_name_change=True))
        except Exception as error:  # no multicast on the interface, say: the face itself works on
            log.warning("tdm face: not announced over zeroconf: %s", error or type(error).__name__)
            if zeroconf is not None:
                await zeroconf.async_close()
            return False
        except asyncio.CancelledError:  # stopped while probing: nothing was announced
            if zeroconf is not None:
                await zeroconf.async_close()
            raise
        self._zeroconf, self._info = zeroconf, info
        log.info(
            "tdm face announced over zeroconf",
            extra={"service": info.name, "addresses": addresses, "port": self.tcp_port, "ws_port": self.ws_port},
        )
        return True

    async def stop(self) -> None:
        """Say goodbye (the service leaves browsers at once) and close the mDNS sockets."""
        registering, self._registering = self._registering, None
        if registering is not None and not registering.done():
            registering.cancel()
        if registering is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await registering
        zeroconf, info = self._zeroconf, self._info
        self._zeroconf = self._info = None
        if zeroconf is None:
            return
        try:
            if info is not None:
                await (await zeroconf.async_unregister_service(info))
        finally:
            await zeroconf.async_close()


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _short_hostname() -> str:
    """The host's name as one DNS label (the first of its name, only letters, digits and -)."""
    first = socket.gethostname().split(".")[0]
    label = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in first).strip("-")
    return label[:63] or "hwgateway"
