"""The gateway process: wires bus, supervisor and servers, and runs the start/stop lifecycle.

Part of the composition root (docs/architecture.md): it hands the core the device kinds
(`devices.registry.KINDS`), builds every face, and gives the MQTT face the adapter of imported
devices (`devices.remote`); the core and the faces import no device.

Shutdown: first, as a task of its own, every device to its safe state (e-stop, then close); then
stop listening, and side by side every client closed with `going_away` (each close bounded; a
client that does not read is aborted) and the MQTT bridge's stop. Every part is bounded by
`gateway.waits.finish_within`, which returns at its deadline even when a task ignores its
cancellation, so no face can hold up the devices' safe state or the exit; the devices' pass takes
at most `STOP_DEADLINE_S`, well inside systemd's `TimeoutStopSec`. The process never exits
because a device failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from devices.registry import KINDS
from gateway import __version__
from gateway.bindings.manager import Bindings
from gateway.bus import Bus
from gateway.commands import CommandRouter
from gateway.config import load as load_config
from gateway.core.adapter import DeviceKinds
from gateway.core.client import Hub
from gateway.core.config import Config, DeviceConfig
from gateway.core.config_digest import config_digest
from gateway.device_options import DeviceOptionsEditor
from gateway.errors import ConfigError, DeviceUnavailable, ErrorCode
from gateway.faces.contract import Face
from gateway.faces.native.msgpack_server import MsgpackServer
from gateway.faces.native.websocket import handler as native_websocket
from gateway.memory import freeze_startup_objects, tune_allocator
from gateway.metrics import Metrics
from gateway.realtime import keep_off_cpus
from gateway.reload import Reloader
from gateway.sdnotify import Notifier
from gateway.servers.http import build_app
from gateway.servers.http_guard import GuardedHttpProtocol, listen_guarded
from gateway.servers.limits import ConnectionLimits, raise_open_file_limit
from gateway.servers.tls import server_context
from gateway.supervisor import Supervisor
from gateway.throttled_logs import RateLimitedLog
from gateway.waits import finish_within

if TYPE_CHECKING:  # the optional faces are imported when a config turns them on: see `Gateway.__init__`
    from gateway.faces.foxglove.server import FoxgloveServer
    from gateway.faces.mqtt.bridge import MqttBridge
    from gateway.faces.ros2.face import Ros2Face
    from gateway.faces.rosbridge.server import RosbridgeServer
    from gateway.faces.tdm.server import TdmServer
    from gateway.record.daemon import BusRecorder
    from gateway.ros.names import RosNames

log = logging.getLogger(__name__)

#: Seconds the whole shutdown may take before what is left is aborted (systemd waits 15 s).
STOP_DEADLINE_S = 5.0
#: Seconds allowed for closing client sessions before their sockets are aborted.
CLIENTS_CLOSE_S = 2.5
#: Seconds a face's part of the stop may take (a listener's close, a cleanup) before it is left behind.
FACE_STOP_S = 1.0
#: Seconds the recorder may take to write what it holds and close its file at the end.
RECORDER_STOP_S = 3.0
#: Signals that stop the daemon in order (every device to its safe state first), as SIGTERM does.
#: Every catchable signal whose default action would end the process at once is here: SIGHUP
#: (the terminal closed; a daemon run with a config file reloads it instead, `RELOAD_SIGNAL`), SIGQUIT,
#: the user and timer signals, SIGXCPU.
#: SIGPIPE and SIGXFSZ are ignored by Python already; SIGKILL and SIGSTOP cannot be caught.
STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name)
    for name in (
        "SIGTERM",
        "SIGINT",
        "SIGHUP",
        "SIGQUIT",
        "SIGUSR1",
        "SIGUSR2",
        "SIGALRM",
        "SIGVTALRM",
        "SIGPROF",
        "SIGIO",
        "SIGPWR",
        "SIGXCPU",
    )
    if hasattr(signal, name)
)
#: The signal that reloads the configuration file with `run --sighup reload` (systemd's `ExecReload`).
RELOAD_SIGNAL = signal.SIGHUP
#: Event-loop lag (s) beyond which /healthz answers 503.
UNHEALTHY_LAG_S = 0.5
_LAG_PERIOD_S = 0.25


class LoopMonitor:
    """Measures how late the event loop wakes a sleeping task (seconds)."""

    def __init__(self, period: float = _LAG_PERIOD_S, window: int = 40) -> None:
        self.period = period
        self.samples: deque[float] = deque(maxlen=window)
        self._peak = 0.0
        self._task: asyncio.Task[None] | None = None

    @property
    def lag(self) -> float:
        """The last measured lag."""
        return self.samples[-1] if self.samples else 0.0

    @property
    def max_lag(self) -> float:
        """The largest lag in the window (about 10 s)."""
        return max(self.samples, default=0.0)

    def take_peak(self) -> float:
        """The largest lag measured since the previous call (s), then start again from 0."""
        peak, self._peak = self._peak, 0.0
        return peak

    def start(self) -> None:
        """Start measuring."""
        self._task = asyncio.create_task(self._run(), name="loop-monitor")

    def stop(self) -> None:
        """Stop measuring."""
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            started = time.monotonic()
            await asyncio.sleep(self.period)
            lag = max(time.monotonic() - started - self.period, 0.0)
            self.samples.append(lag)
            self._peak = max(self._peak, lag)


class Gateway:
    """One running gateway."""

    def __init__(self, config: Config, kinds: DeviceKinds = KINDS, config_path: str | Path | None = None) -> None:
        self.config = config
        self._kinds = kinds
        self.bus = Bus()
        self.supervisor = Supervisor(self.bus, config.supervisor, config.devices, kinds)
        self.router = CommandRouter(self.supervisor, self._observe_command)
        #: The `[bindings.<name>]` of the config, each a supervised device (docs/bindings.md).
        self.bindings = Bindings(self.supervisor, self.router, self.bus)
        self.bindings.start(config.bindings)
        self.hub = Hub(self.bus, self.supervisor, self.router, config.server, config.auth.all_credentials())
        #: Applies the configuration file again (SIGHUP, the admin `reload` op); `config_path` None: the demo's.
        self.reloader = Reloader(self, config_path, load_config)
        #: Edits a device's options (admin `device_options` and `configure_device` ops) through a reload.
        self.device_options = DeviceOptionsEditor(self, load_config)
        self.hub.admin = GatewayAdmin(self)
        self.monitor = LoopMonitor()
        self.metrics = Metrics(self.hub, lambda: self.monitor.lag)
        self._runner: web.AppRunner | None = None
        self._http_server: asyncio.Server | None = None
        self._guards: dict[asyncio.BaseTransport, GuardedHttpProtocol] = {}
        self.limits = ConnectionLimits(config.server, raise_open_file_limit())
        self._msgpack = MsgpackServer(self.hub, self.limits)
        # Faces and the recorder a config leaves off are not even imported: together they were a fifth
        # of the daemon's start (0.2 s of CPU of 1.0 here, several times that on a Raspberry Pi), and
        # a reload does not turn them on (a face's section needs a restart, README).
        self._ros_names: RosNames | None = None
        if config.rosbridge.enabled or config.ros2.enabled:
            from gateway.ros import names as ros_names

            self._ros_names = ros_names.RosNames(ros_names.namings_of(config.devices, kinds))
        self._rosbridge: RosbridgeServer | None = None
        if config.rosbridge.enabled and self._ros_names is not None:
            from gateway.faces.rosbridge.server import RosbridgeServer

            self._rosbridge = RosbridgeServer(
                self.hub, self._ros_names, config.rosbridge.port, self.limits, self._guards
            )
        self.mqtt: MqttBridge | None = None
        if config.mqtt.enabled:
            from devices.remote.adapter import RemoteDevice
            from gateway.faces.mqtt.bridge import MqttBridge

            self.mqtt = MqttBridge(config.mqtt, self.hub, RemoteDevice.imported)
            self.metrics.registry.register(self.mqtt.collector())
        self.tdm: TdmServer | None = None
        if config.tdm.enabled:
            from gateway.faces.tdm.server import TdmServer

            self.tdm = TdmServer(self.hub, config.tdm, self.limits)
        self._foxglove: FoxgloveServer | None = None
        if config.foxglove.enabled:
            from gateway.faces.foxglove.server import FoxgloveServer

            self._foxglove = FoxgloveServer(self.hub, self.limits, config.foxglove.port)
        #: Every face's own listeners (and MQTT's broker link), through the face contract (the HTTP port's
        #: `/ws` and `/rosbridge` are the app's).
        self.faces: list[Face] = [
            face for face in (self._msgpack, self.tdm, self._rosbridge, self._foxglove) if face is not None
        ]
        if self.mqtt is not None:
            from gateway.faces.mqtt.face import MqttFace

            self.faces.append(MqttFace(self.mqtt))
        self.ros2: Ros2Face | None = None
        if config.ros2.enabled and self._ros_names is not None:
            from gateway.faces.ros2.face import Ros2Face

            self.ros2 = Ros2Face(self.hub, config.ros2, self._ros_names, lambda: self.health()[1])
            self.faces.append(self.ros2)
        self.config_digest = config_digest(config)
        self.recorder: BusRecorder | None = None
        if config.record.enabled:
            from gateway.record.daemon import BusRecorder

            self.recorder = BusRecorder(config, self.bus, self.supervisor, self.router)
            self.metrics.registry.register(self.recorder.collector())
        self.http_port: int | None = None
        self.started = time.time()

    def devices_changed(self, devices: tuple[DeviceConfig, ...]) -> None:
        """A reload started or stopped devices (`devices`: the config's now); faces naming devices up front follow."""
        if self._ros_names is not None:
            from gateway.ros.names import namings_of

            self._ros_names.rebuild(namings_of(devices, self._kinds))

    def _observe_command(self, device: str, outcome: str, seconds: float) -> None:
        self.metrics.observe_command(device, outcome, seconds)

    @property
    def foxglove_port(self) -> int | None:
        """The bound Foxglove WebSocket port (None when disabled)."""
        return self._foxglove.port if self._foxglove is not None else None

    @property
    def msgpack_port(self) -> int | None:
        """The bound msgpack TCP port (None when disabled)."""
        return self._msgpack.tcp_port

    def face_urls(self) -> dict[str, str]:
        """The URL of each other face's own listener (rosbridge, ...), by face name, once listening."""
        shown = {"rosbridge": "rosbridge", "foxglove": "Foxglove", "tdm": "tdm"}
        urls = {}
        for face in self.faces:
            for name, url in face.listeners().items():
                if name in shown and url is not None:
                    urls[shown[name]] = url
        return urls

    async def start(self) -> None:
        """Start adapters, then listen; raise `OSError` when an address cannot be bound."""
        server = self.config.server
        self.monitor.start()
        if self.recorder is not None:
            self.recorder.start()  # before the devices: their first availability is in the file
        self.supervisor.start()
        app = build_app(server, self.health, self.metrics.render, self._guards)
        app.router.add_get("/ws", native_websocket(self.hub, self._guards))
        if self._rosbridge is not None and self._ros_names is not None:
            from gateway.faces.rosbridge.server import handler as rosbridge_handler

            app.router.add_get("/rosbridge", rosbridge_handler(self.hub, self._ros_names))
        tls = server_context(server)
        self._runner, self._http_server = await listen_guarded(
            app, "HTTP", server.host, server.http_port, tls, server, self.limits, self._guards
        )
        self.http_port = self._http_server.sockets[0].getsockname()[1]
        for face in self.faces:
            await face.start(tls)
        http, websocket = ("https", "wss") if tls else ("http", "ws")
        listeners: dict[str, str | None] = {"msgpack": None, "unix": None, "rosbridge": None, "foxglove": None}
        for face in self.faces:
            listeners.update(face.listeners())
        listeners.pop("tdm", None)  # logged by the TDM face itself
        log.info(
            "listening",
            extra={
                "http": f"{http}://{server.host}:{self.http_port}/",
                "websocket": f"{websocket}://{server.host}:{self.http_port}/ws",
                **listeners,
                "devices": sorted(self.supervisor.devices),
                "max_clients": self.limits.max_clients,
            },
        )

    async def stop(self) -> None:
        """Put every device in its safe state, stop listening and close the clients; bounded in time.

        The devices' safe-state pass starts first, as a task of its own that no face's stop can
        delay or block: each face's stop is bounded by `finish_within`, which returns at its
        deadline even when a task it waits for ignores cancellation.
        """
        log.info("stopping")
        devices = asyncio.create_task(self.supervisor.stop(), name="devices-safe-state")
        for face in self.faces:
            face.stop_listening()
        if self._http_server is not None:
            self._http_server.close()
        stopping = [
            finish_within("the devices' safe-state pass", devices, STOP_DEADLINE_S),
            finish_within("closing the clients", self._close_clients(), CLIENTS_CLOSE_S + FACE_STOP_S),
        ]
        # What a face runs besides its sessions (MQTT: says `offline`, then disconnects), each bounded.
        stopping += [
            finish_within(f"the {face.name}'s stop", face.stop(), face.stop_deadline_s)
            for face in self.faces
            if face.stop_deadline_s > 0
        ]
        if not all(await asyncio.gather(*stopping)):
            self._abort_http_connections()
        if self.recorder is not None:  # after the devices: their last availability is in the file
            await finish_within("the recorder's stop", self.recorder.stop(), RECORDER_STOP_S)
        self.monitor.stop()
        log.info("stopped")

    async def _close_clients(self) -> None:
        """Close every session with `going_away`; abort the sockets of those that do not drain."""
        sessions = list(self.hub.sessions)
        try:
            async with asyncio.timeout(CLIENTS_CLOSE_S):
                await asyncio.gather(
                    *(session.close(ErrorCode.GOING_AWAY, "gateway shutting down") for session in sessions),
                    return_exceptions=True,
                )
        except TimeoutError:
            for session in sessions:
                session.abort()
        self._abort_http_connections()  # plain HTTP connections (and any WebSocket not yet closed)
        if self._runner is not None:
            await self._runner.cleanup()
        for face in self.faces:  # refused or half-open connections that never had a session, too
            await face.cleanup()

    def _abort_http_connections(self) -> None:
        for transport in list(self._guards):
            if isinstance(transport, asyncio.WriteTransport):
                transport.abort()
        for face in self.faces:
            face.abort_connections()

    def healthy(self) -> bool:
        """True when the event loop kept up since the previous call and every adapter task is alive.

        The watchdog calls it once a tick. It takes the largest lag since the previous tick, not the
        last one measured: after a hang the loop may run the watchdog's tick before the monitor's,
        and the monitor's next sample is small again, so the hang would never be seen.
        """
        return self.monitor.take_peak() <= UNHEALTHY_LAG_S and self.supervisor.tasks_alive()

    def summary(self) -> str:
        """One line for systemd's STATUS=."""
        devices = self.supervisor.devices.values()
        connected = sum(1 for handle in devices if handle.status == "connected")
        clients = len(self.hub.sessions)
        return f"{connected}/{len(devices)} devices connected, {clients} client{'s' if clients != 1 else ''}"

    def health(self) -> tuple[int, dict[str, Any]]:
        """HTTP status and body of /healthz: 503 when the event loop lags or an adapter task died.

        `status` is "ok", "degraded" (200: a configured device is not connected) or "unhealthy" (503);
        `reasons` says why it is not "ok".
        """
        lagging = self.monitor.max_lag > UNHEALTHY_LAG_S
        tasks_alive = self.supervisor.tasks_alive()
        healthy = not lagging and tasks_alive
        # Degraded: the process is fine (probes pass) but a configured device is not connected.
        down = [h for h in self.supervisor.devices.values() if h.status != "connected"]
        reasons = [f"device {h.id} is {h.status}" + (f": {h.detail}" if h.detail else "") for h in down]
        if lagging:
            lag_ms = self.monitor.max_lag * 1000
            reasons.insert(0, f"event loop lag {lag_ms:.0f} ms over {UNHEALTHY_LAG_S * 1000:.0f} ms")
        if not tasks_alive:
            reasons.insert(0, "a device task died")
        body: dict[str, Any] = {
            "status": "unhealthy" if not healthy else "degraded" if down else "ok",
            "reasons": reasons,
            "version": __version__,
            "config_digest": self.config_digest,
            "uptime_s": round(time.time() - self.started, 3),
            "loop_lag_ms": round(self.monitor.lag * 1000, 3),
            "loop_lag_max_ms": round(self.monitor.max_lag * 1000, 3),
            "adapter_tasks_alive": tasks_alive,
            "clients": len(self.hub.sessions),
            # Bytes of unfinished requests all connections hold now (within server.max_partial_bytes).
            "partial_bytes": self.limits.partial_bytes,
            "devices": [
                {"id": h.id, "kind": h.kind, "status": h.status, "detail": h.detail, "reconnects": h.reconnects}
                for h in self.supervisor.devices.values()
            ],
        }
        if self.recorder is not None:
            body["record"] = self.recorder.health()  # a recording failure leaves the devices working: still healthy
        if self.mqtt is not None:
            body["mqtt"] = self.mqtt.health()  # a broker outage leaves local devices working: still healthy
        if self.ros2 is not None:
            body["ros2"] = self.ros2.health()  # without the extra the face is unavailable: the gateway is still healthy
        return (200 if healthy else 503), body


class GatewayAdmin:
    """A running gateway's admin operations (`gateway.core.client.AdminOps`): reload, device options, scan, pair."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._pairing = asyncio.Lock()

    async def reload_op(self) -> dict[str, Any]:
        """Apply the configuration file again (`gateway.reload`)."""
        return await self._gateway.reloader.reload_op()

    async def scan_op(
        self,
        families: tuple[str, ...] | None,
        timeout_s: float | None,
        serial: tuple[str, ...],
        kortex: tuple[str, ...],
    ) -> dict[str, Any]:
        """Look for attached devices (`gateway.scan`), leaving the serial ports of configured devices alone."""
        from gateway import scan

        return await scan.scan_op(self._gateway.config.devices, families, timeout_s, serial, kortex)

    async def device_options_op(self, device: str) -> dict[str, Any]:
        """A device's options as running, and which are overridden (`gateway.device_options`)."""
        return self._gateway.device_options.options(device)

    async def configure_device_op(self, device: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """Change a device's options and reload (`gateway.device_options`); the reload's report."""
        return await self._gateway.device_options.configure(device, options)

    async def pair_op(self, kind: str, address: str, timeout_s: float | None, passkey: int | None) -> dict[str, Any]:
        """Pair a Bluetooth device through BlueZ (`devices.bluez.pairing`), one pairing window at a time."""
        from gateway import pair

        if self._pairing.locked():
            raise DeviceUnavailable("pair: another pairing window is open; try again when it has ended")
        async with self._pairing:
            return await pair.pair_op(kind, address, timeout_s, passkey)


async def serve(
    config: Config,
    on_listening: Callable[[Gateway], None] | None = None,
    config_path: str | Path | None = None,
    reload_on_sighup: bool = False,
) -> int:
    """Run the gateway until SIGTERM, SIGINT or another of `STOP_SIGNALS`; return the exit code.

    `on_listening` is called once every listener accepts connections (the demo prints its URLs then).
    `config_path` is the file `config` was read from, which a reload reads again (None: the demo's,
    which has none). With `reload_on_sighup` (`run --sighup reload`, the systemd unit's), SIGHUP
    reloads it (`gateway.reload`) instead of stopping; otherwise SIGHUP is a closed terminal and
    stops in order, as the other signals do.

    Under systemd (`Type=notify`) it reports READY=1 once every server listens, pings the watchdog
    while healthy, RELOADING=1 then READY=1 around a reload, and STOPPING=1 when it starts to shut down.
    """
    tune_allocator()
    # Before any thread starts: the daemon leaves the CPUs its 1 kHz loops are pinned to.
    keep_off_cpus(frozenset(cpu for d in config.devices if d.enabled for cpu in getattr(d.options, "cyclic_cpus", ())))
    gateway = Gateway(config, config_path=config_path)
    notifier = Notifier()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_quiet_resource_exhaustion())
    received: list[signal.Signals] = []
    reloads: set[asyncio.Task[None]] = set()

    def stop_on(signum: signal.Signals) -> None:
        received.append(signum)
        stop.set()

    def reload_on(signum: signal.Signals) -> None:
        task = loop.create_task(_reload_on_signal(gateway, notifier), name="reload")
        reloads.add(task)
        task.add_done_callback(reloads.discard)

    for signum in STOP_SIGNALS:
        reloads_here = signum == RELOAD_SIGNAL and reload_on_sighup and config_path is not None
        loop.add_signal_handler(signum, reload_on if reloads_here else stop_on, signum)
    try:
        try:
            await gateway.start()
        except OSError as error:
            log.error("cannot start: %s", error)
            await gateway.stop()
            return 1
        freeze_startup_objects()
        if on_listening is not None:
            on_listening(gateway)
        notifier.notify("READY=1", f"STATUS={gateway.summary()}")
        watchdog = asyncio.create_task(notifier.watchdog(gateway.healthy, gateway.summary), name="watchdog")
        await stop.wait()
        log.info("%s received: stopping", received[0].name, extra={"signal": received[0].name})
        notifier.notify("STOPPING=1", "STATUS=stopping")
        watchdog.cancel()
        await gateway.stop()
        return 0
    finally:
        notifier.close()
        for signum in STOP_SIGNALS:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)
            # A repeated signal while the process winds down must not turn a clean exit into a kill.
            signal.signal(signum, signal.SIG_IGN)


async def _reload_on_signal(gateway: Gateway, notifier: Notifier) -> None:
    """SIGHUP: reload the configuration file; log every error (then nothing changed) or what was done."""
    log.info(
        "%s received: reloading %s", RELOAD_SIGNAL.name, gateway.reloader.path, extra={"signal": RELOAD_SIGNAL.name}
    )
    notifier.notify("RELOADING=1", f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}")
    try:
        await gateway.reloader.reload()
    except ConfigError as error:
        log.error(
            "reload refused, nothing changed: %d configuration error%s",
            len(error.errors),
            "" if len(error.errors) == 1 else "s",
            extra={"errors": [str(problem) for problem in error.errors]},
        )
        for problem in error.errors:
            log.error("config: %s", problem)
    except Exception:
        log.exception("reload failed")
    finally:
        notifier.notify("READY=1", f"STATUS={gateway.summary()}")


#: errno values that mean the process or the system ran out of something (descriptors, memory).
_EXHAUSTION_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def _quiet_resource_exhaustion() -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An exception handler that logs "out of descriptors" on accept() once per interval, without traceback.

    asyncio reports every failed accept() with a traceback, thousands a second under a connection
    flood; everything else goes to the default handler.
    """
    exhaustion = RateLimitedLog("resource exhaustion", 10.0)

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if isinstance(error, OSError) and error.errno in _EXHAUSTION_ERRNOS:
            exhaustion.log("%s: %s", context.get("message", "resource exhausted"), error.strerror or error)
            return
        loop.default_exception_handler(context)

    return handle
