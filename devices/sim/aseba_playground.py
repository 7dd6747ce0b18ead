"""Runs Debian's `asebaplayground` (simulated Thymio II robots, the real Aseba VM) headless.

For tests and benchmarks only. The playground binds every interface and has no option to bind
loopback, so `start` refuses to run unless the process is in a network namespace whose only
interface is `lo` (``scripts/loopback-only.sh``). It accepts one client per robot and crashes
(SIGSEGV) when a client connects before it has closed its end of the client that left (it does so
on its next simulation steps, 30 to 45 ms on an idle machine): callers keep one connection per robot,
or await `wait_released` before a robot's next client connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Seconds to wait for the robots' ports to accept connections (0.3 s idle; a loaded CI is slower).
START_TIMEOUT_S = 20.0
#: Seconds to wait for the playground to close its end of the clients that left (45 ms idle).
RELEASE_TIMEOUT_S = 20.0
#: The kernel's TCP state number (/proc/net/tcp) of a connection whose peer closed and whose own end is
#: still open.
_TCP_CLOSE_WAIT = 8

_SCENARIO = """<!DOCTYPE aseba-playground>
<aseba-playground>
  <color name="floor" r="0.9" g="0.9" b="0.9" />
  <color name="wall" r="0.5" g="0.5" b="0.5" />
  <world w="200" h="200" color="floor" />
{robots}
</aseba-playground>
"""


def loopback_only() -> bool:
    """True when this process's network namespace has no interface but `lo`."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]


@dataclass(frozen=True, slots=True)
class PlaygroundRobot:
    """A simulated Thymio II: its TCP `port` on 127.0.0.1 and its Aseba `node_id`."""

    port: int
    node_id: int


class Playground:
    """One asebaplayground process with `robots` Thymios, in `workdir` (its HOME and scenario)."""

    def __init__(self, workdir: Path, ports: list[int]) -> None:
        self.workdir = workdir
        self.robots = [PlaygroundRobot(port, index + 1) for index, port in enumerate(ports)]
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Write the scenario and start the playground; return once every robot's port accepts.

        A start whose ports are not all listening in time is tried once more. Twice in one session
        here (once on an idle machine) a playground left one robot's port unbound for 30 s; the cause
        was not found, and a start a minute later took 0.1 s, as starts usually do.
        """
        try:
            await self._start_once()
        except TimeoutError as error:
            log.warning("%s; starting it again", error)
            await self._start_once()

    async def _start_once(self) -> None:
        executable = shutil.which("asebaplayground")
        if executable is None:
            raise FileNotFoundError("asebaplayground is not installed (Debian package aseba)")
        if not loopback_only():
            raise RuntimeError("asebaplayground binds every interface: run it under scripts/loopback-only.sh")
        home = self.workdir / "home"
        runtime = self.workdir / "xdg"
        for folder in (home, runtime):
            folder.mkdir(parents=True, exist_ok=True)
        runtime.chmod(0o700)
        robots = "\n".join(
            f'  <robot type="thymio2" x="{40 + 60 * i}" y="100" port="{r.port}" nodeId="{r.node_id}" name="t{i}" />'
            for i, r in enumerate(self.robots)
        )
        scenario = self.workdir / "gateway.playground"
        scenario.write_text(_SCENARIO.format(robots=robots))
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(runtime),
            "QT_QPA_PLATFORM": "offscreen",
        }
        log = (self.workdir / "playground.log").open("wb")
        self.process = await asyncio.create_subprocess_exec(
            executable, str(scenario), env=env, stdout=log, stderr=asyncio.subprocess.STDOUT
        )
        log.close()
        try:
            await self._wait_listening()
        except BaseException:  # not listening in time, or cancelled: the process is not left behind
            await self.stop()
            raise

    async def _wait_listening(self) -> None:
        # Probe with a bare bind attempt, not a connection: a connection would be the playground's
        # one client, and closing it right before the real client connects can crash it.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT_S
        for robot in self.robots:
            while not _port_taken(robot.port):
                if self.process is not None and self.process.returncode is not None:
                    raise RuntimeError(f"asebaplayground exited with {self.process.returncode}: {self.log()}")
                if loop.time() > deadline:
                    output = self.log().strip() or "(no output)"
                    raise TimeoutError(
                        f"asebaplayground did not listen on {robot.port} in {START_TIMEOUT_S} s; its output: {output}"
                    )
                await asyncio.sleep(0.05)

    async def wait_released(self) -> None:
        """Return once the playground has closed its end of every client that left.

        A client that connects before that crashes the playground: await this before a robot's next
        client connects (a new gateway, a test's own link). Raises TimeoutError after
        RELEASE_TIMEOUT_S, and RuntimeError if the playground has exited.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RELEASE_TIMEOUT_S
        ports = {robot.port for robot in self.robots}
        while _closing_ports() & ports:
            if self.process is not None and self.process.returncode is not None:
                raise RuntimeError(f"asebaplayground exited with {self.process.returncode}: {self.log()}")
            if loop.time() > deadline:
                raise TimeoutError(f"asebaplayground did not close its clients' ends in {RELEASE_TIMEOUT_S} s")
            await asyncio.sleep(0.01)

    def log(self) -> str:
        """The playground's output so far (last 2000 characters)."""
        path = self.workdir / "playground.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    async def stop(self) -> None:
        """Stop the playground by its pid."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        process.terminate()
        try:
            async with asyncio.timeout(5):
                await process.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def _closing_ports() -> set[int]:
    """Local ports of this network namespace's TCP connections whose peer closed and whose own end is open."""
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[3], 16) == _TCP_CLOSE_WAIT:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports
