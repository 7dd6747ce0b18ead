"""Bindings end to end with real parts: an SDL virtual pad drives a Thymio in Debian's asebaplayground.

One playground, one in-process gateway and one virtual pad for the module. The gateway's gamepad
device binds the test's SDL virtual pad (real SDL, `name_contains`), the `drive` binding turns it
into `hwgateway/ThymioMotors` commands, and the test reads `motor.left.target` and
`motor.right.target` back from the real Aseba VM (`asebaros_msgs/GetVariable`; after SIGTERM over a
link of its own, as the playground serves one client per robot). Each way a
binding ends brings the targets to 0: deadman release, a stalled source (one publishing on change
only, and one whose adapter republishes a state SDL no longer reads), the source detached, the
binding removed, a client gone, STOP ALL and SIGTERM; and the arbitration between bindings and
clients by priority. The SIGTERM test stops the module's gateway: it runs last.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio

from devices.aseba.network import AsebaNetwork
from devices.aseba.transport import Target, open_link
from devices.gamepad import sdl_backend
from devices.gamepad.model import VirtualSpec
from devices.gamepad.sdl_backend import SdlBackend
from devices.gamepad.sdl_virtual import VirtualPad
from devices.sim.aseba_playground import Playground
from gateway.bindings.device import BindingDevice
from tests.conftest import require_peer
from tests.harness import Client, connect, free_port, gateway_config
from tests.inprocess import InProcessGateway, start_in_process

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]

#: A hang guard, not a measure: the playground answers on its simulation tick, and CI is loaded.
WAIT_S = 15.0
PAD_NAME = "bindings e2e pad"
STILL_PAD_NAME = "bindings e2e still"
#: SDL game controller indexes of the virtual pad: the left stick's y axis, L1 and R1.
LEFT_Y, L1, R1 = 1, 9, 10
FULL_UP = -32768  # SDL's y axis grows downwards: full up reads +1 on `state.axes.left_y`


def config(port: int) -> str:
    return f"""
[devices.pad]
kind = "gamepad"
name_contains = "{PAD_NAME}"
rate_hz = 50.0

# A second pad publishing only on change (rate_hz = 0): held still, it sends no new samples (a held
# button turning into a long press is a change: not within the test).
[devices.pad-still]
kind = "gamepad"
name_contains = "{STILL_PAD_NAME}"
rate_hz = 0.0
long_press_s = 60.0

[devices.thymio]
kind = "aseba"
target = "tcp:127.0.0.1;{port}"
request_timeout_ms = 5000

[bindings.drive]
source = "pad"
target = "thymio"
mode = "arcade"
deadman = "state.buttons.l1"
rate_hz = 20.0
timeout_s = 0.4
priority = 100

[bindings.drive.inputs.throttle]
path = "state.axes.left_y"

[bindings.drive.inputs.steer]
path = "state.axes.left_x"

[bindings.drive.outputs.left]
command = "hwgateway/ThymioMotors"
field = "left"
max = 300

[bindings.drive.outputs.right]
command = "hwgateway/ThymioMotors"
field = "right"
max = 300

[bindings.still]
source = "pad-still"
target = "thymio"
mode = "tank"
deadman = "state.buttons.l1"
rate_hz = 20.0
timeout_s = 0.4

[bindings.still.inputs.left]
path = "state.axes.left_y"

[bindings.still.inputs.right]
path = "state.axes.left_y"

[bindings.still.outputs.left]
command = "hwgateway/ThymioMotors"
field = "left"
max = 200

[bindings.still.outputs.right]
command = "hwgateway/ThymioMotors"
field = "right"
max = 200

[bindings.slow]
source = "pad"
target = "thymio"
mode = "arcade"
deadman = "state.buttons.r1"
rate_hz = 20.0
timeout_s = 0.4
priority = 10

[bindings.slow.inputs.throttle]
path = "state.axes.left_y"

[bindings.slow.inputs.steer]
path = "state.axes.left_x"

[bindings.slow.outputs.left]
command = "hwgateway/ThymioMotors"
field = "left"
max = 100

[bindings.slow.outputs.right]
command = "hwgateway/ThymioMotors"
field = "right"
max = 100
"""


class Observer:
    """Reads the motor targets from the real Aseba VM: through the gateway's `GetVariable` (its one link to
    the robot: the playground takes one client per robot), or over a link of its own once the gateway is gone.
    """

    def __init__(self, client: Client) -> None:
        self.client: Client | None = client
        self.direct: tuple[AsebaNetwork, int, tuple[int, int]] | None = None

    async def targets(self) -> tuple[int, int]:
        values: list[int] = []
        for variable in ("motor.left.target", "motor.right.target"):
            if self.direct is not None:
                network, node_id, addresses = self.direct
                address = addresses[len(values)]
                values.append(_signed((await network.get_variables(node_id, address, 1))[0]))
            else:
                assert self.client is not None
                answer = await self.client.ok(
                    "command", device="thymio", type="asebaros_msgs/GetVariable", data={"variable": variable}
                )
                values.append(answer["data"][0])
        return values[0], values[1]

    async def open_own_link(self, playground: Playground) -> None:
        """Read the playground's first robot over a link of the test's own (after the gateway closed its link)."""
        await playground.wait_released()
        robot = playground.robots[0]
        reader, writer = await open_link(Target("tcp", host="127.0.0.1", port=robot.port))
        network = AsebaNetwork(reader, writer, on_node=lambda node: None, on_event=lambda message: None)
        self._serving = asyncio.create_task(network.serve())
        node = await network.wait_described(robot.node_id, WAIT_S)
        assert node.description is not None
        variables = node.description.variables
        addresses = (variables["motor.left.target"].address, variables["motor.right.target"].address)
        self.direct = (network, robot.node_id, addresses)

    async def close(self) -> None:
        if self.direct is not None:
            self._serving.cancel()
            with contextlib.suppress(BaseException):
                await self._serving
            await self.direct[0].close()

    async def until(self, want: tuple[int, int], what: str) -> None:
        seen: tuple[int, int] | None = None
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            seen = await self.targets()
            if seen == want:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"{what}: the VM's motor targets are {seen}, expected {want}")

    async def until_driving(self, what: str) -> tuple[int, int]:
        """Wait until both targets are the same and not 0 (a binding driving both wheels alike)."""
        seen: tuple[int, int] | None = None
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            seen = await self.targets()
            if seen[0] == seen[1] != 0:
                return seen
            await asyncio.sleep(0.02)
        raise AssertionError(f"{what}: the VM's motor targets are {seen}, expected both alike and not 0")


def _signed(word: int) -> int:
    return word - 0x10000 if word >= 0x8000 else word


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port()])
    await running.start()
    yield running
    await running.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sdl() -> AsyncIterator[SdlBackend]:
    backend = sdl_backend.acquire()
    await backend.ready()
    yield backend
    await sdl_backend.release(backend)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pad(sdl: SdlBackend) -> AsyncIterator[list[VirtualPad]]:
    """The virtual pad, in a list: the detach test replaces it."""
    pads = [await sdl.attach_virtual(VirtualSpec(PAD_NAME))]
    yield pads
    for attached in pads:
        if attached.attached:
            await sdl.detach_virtual(attached)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def still_pad(sdl: SdlBackend) -> AsyncIterator[VirtualPad]:
    """The still pad's virtual pad."""
    attached = await sdl.attach_virtual(VirtualSpec(STILL_PAD_NAME))
    yield attached
    await sdl.detach_virtual(attached)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(
    playground: Playground, pad: list[VirtualPad], still_pad: VirtualPad, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[InProcessGateway]:
    tmp_path = tmp_path_factory.mktemp("gateway")
    running = await start_in_process(tmp_path, gateway_config(tmp_path, config(playground.robots[0].port)))
    yield running
    assert await running.stop() == 0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(gateway: InProcessGateway) -> AsyncIterator[Client]:
    ws = await connect(gateway, "ws")
    await ws.until_connected({"pad", "pad-still", "thymio", "drive", "still", "slow"}, timeout=WAIT_S)
    yield ws
    await ws.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def observer(client: Client) -> AsyncIterator[Observer]:
    reading = Observer(client)
    yield reading
    await reading.close()


def binding(gateway: InProcessGateway, name: str) -> BindingDevice:
    return gateway.gateway.bindings.devices[name]


async def until(predicate: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def ticks_pass(device: BindingDevice, count: int) -> None:
    """Wait until the binding's timer has ticked `count` more times (a number of output periods, not a sleep)."""
    start = device.runtime.ticks
    await until(lambda: device.runtime.ticks >= start + count, f"{count} ticks of {device.runtime.settings.name}")


async def stick(sdl: SdlBackend, pad: list[VirtualPad], y: int = 0, l1: bool = False, r1: bool = False) -> None:
    await sdl.set_virtual(pad[-1], axes={LEFT_Y: y}, buttons={L1: l1, R1: r1})


async def drive(sdl: SdlBackend, pad: list[VirtualPad], observer: Observer, what: str) -> None:
    """Full up with the deadman (L1) held, until the VM's targets are the binding's 300."""
    await stick(sdl, pad, FULL_UP, l1=True)
    await observer.until((300, 300), what)


async def test_the_pad_drives_the_thymio_and_the_deadman_release_stops_it(
    client: Client, gateway: InProcessGateway, sdl: SdlBackend, pad: list[VirtualPad], observer: Observer
) -> None:
    await client.ok("subscribe", topics=["drive/status"])
    await drive(sdl, pad, observer, "driving with the deadman held")
    status = await client.wait_for(lambda m: m.get("topic") == "drive/status" and m["data"]["state"] == "active")
    assert status["type"] == "hwgateway/BindingStatus"
    assert status["data"]["deadman_held"] is True
    assert (status["data"]["target"], status["data"]["fields"]) == ("thymio", ["left", "right"])
    await stick(sdl, pad, FULL_UP, l1=False)  # the stick stays up: only the deadman is released
    await observer.until((0, 0), "the deadman released")
    idle = await client.wait_for(
        lambda m: m.get("topic") == "drive/status" and m["data"]["state"] == "idle" and m["data"]["safe_outputs_sent"]
    )
    assert idle["data"]["reason"] == "deadman released"
    listed = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
    assert listed["drive"]["kind"] == "binding"
    assert listed["drive"]["capabilities"]["binding"]["deadman"] == "state.buttons.l1"
    assert listed["drive"]["capabilities"]["status"]["state"] == "idle"
    described = await client.ok("describe", type="hwgateway/BindingStatus")
    assert "deadman_held" in described["schema"]["properties"]


async def test_a_stalled_source_stops_the_robot(
    gateway: InProcessGateway, sdl: SdlBackend, still_pad: VirtualPad, observer: Observer
) -> None:
    still = still_pad
    await sdl.set_virtual(still, axes={LEFT_Y: FULL_UP}, buttons={L1: True})
    # The pad publishes only on change: held still, its newest sample ages until the binding's timeout.
    await observer.until((200, 200), "driving from the still pad")
    await observer.until((0, 0), "the source stalled")
    runtime = binding(gateway, "still").runtime
    assert runtime.reason.startswith("source silent for")
    assert gateway.gateway.supervisor.devices["pad-still"].status == "connected"
    assert runtime.deadman_held  # the deadman is still held: only the silence stopped it
    await sdl.set_virtual(still, axes={LEFT_Y: 0}, buttons={L1: False})


async def test_republished_states_count_only_while_the_pad_is_really_read(
    gateway: InProcessGateway, sdl: SdlBackend, pad: list[VirtualPad], observer: Observer
) -> None:
    """The pad's adapter republishes its state 50 times a second; those count while SDL reads the pad, not after."""
    device = binding(gateway, "drive")
    periods = int(device.runtime.settings.timeout_s / device.runtime.settings.period_s)
    await drive(sdl, pad, observer, "driving with the stick held still")
    await ticks_pass(device, 2 * periods)  # held still for twice the timeout: the readings are fresh
    assert await observer.targets() == (300, 300)
    assert device.runtime.state == "active"
    repeats = device.runtime.source.repeats
    stalled = threading.Event()
    sdl.submit(stalled.wait)  # the SDL thread stops reading the pad; the adapter still republishes
    try:
        await observer.until((0, 0), "the pad no longer read")
        assert device.runtime.reason.startswith("source silent for")
        assert device.runtime.source.repeats > repeats
        assert gateway.gateway.supervisor.devices["pad"].status == "connected"
    finally:
        stalled.set()
    await stick(sdl, pad)


async def test_the_source_detached_stops_the_robot(
    gateway: InProcessGateway, sdl: SdlBackend, pad: list[VirtualPad], observer: Observer
) -> None:
    await drive(sdl, pad, observer, "driving before the detach")
    await sdl.detach_virtual(pad[-1])
    await observer.until((0, 0), "the source detached")
    assert binding(gateway, "drive").runtime.reason == "source pad lost"
    pad.append(await sdl.attach_virtual(VirtualSpec(PAD_NAME)))
    await until(lambda: gateway.gateway.supervisor.devices["pad"].status == "connected", "the pad back")
    await drive(sdl, pad, observer, "driving with the pad back")
    await stick(sdl, pad)
    await observer.until((0, 0), "the deadman released")


async def test_the_binding_removed_stops_the_robot_and_comes_back(
    gateway: InProcessGateway, sdl: SdlBackend, pad: list[VirtualPad], observer: Observer
) -> None:
    bindings = gateway.gateway.bindings
    await drive(sdl, pad, observer, "driving before the removal")
    spec = binding(gateway, "drive").runtime.evaluator.spec  # type: ignore[attr-defined]
    await bindings.remove("drive")
    await observer.until((0, 0), "the binding removed")
    assert "drive" not in gateway.gateway.supervisor.devices
    bindings.add(spec)
    await drive(sdl, pad, observer, "the binding added again")  # the deadman is still held
    await stick(sdl, pad)
    await observer.until((0, 0), "the deadman released")


async def test_a_client_gone_stops_what_it_drove(gateway: InProcessGateway, observer: Observer) -> None:
    other = await connect(gateway, "ws")
    await other.ok("command", device="thymio", type="hwgateway/ThymioMotors", data={"left": 50, "right": 60})
    await observer.until((50, 60), "the client's command")
    await other.close()
    await observer.until((0, 0), "the client gone")


async def test_stop_all_preempts_every_binding_until_resumed(
    client: Client, gateway: InProcessGateway, sdl: SdlBackend, pad: list[VirtualPad], observer: Observer
) -> None:
    device = binding(gateway, "drive")
    await drive(sdl, pad, observer, "driving before STOP ALL")
    outcomes = (await client.ok("estop"))["devices"]
    assert all(outcome["ok"] for outcome in outcomes), outcomes
    await observer.until((0, 0), "STOP ALL")
    assert device.runtime.state == "stopped"
    sent = device.runtime.delivery.sent
    await ticks_pass(device, 5)  # the deadman is held and the stick up all along
    assert device.runtime.delivery.sent == sent
    assert await observer.targets() == (0, 0)
    resumed = await client.ok("command", device="drive", type="hwgateway/BindingResume", data={})
    assert resumed["paused"] is False
    await ticks_pass(device, 3)
    assert await observer.targets() == (0, 0)  # resumed, but the deadman must be pressed anew
    await stick(sdl, pad, FULL_UP, l1=False)
    await until(lambda: device.runtime.reason == "deadman released", "the deadman seen released")
    await drive(sdl, pad, observer, "pressed anew after the resume")
    paused = await client.ok("command", device="drive", type="hwgateway/BindingPause", data={})
    assert paused["paused"] is True
    await observer.until((0, 0), "paused from the API")
    await client.ok("command", device="drive", type="hwgateway/BindingResume", data={})
    await stick(sdl, pad)
    # Resumed: the release must reach the binding before the next test presses the deadman again.
    await until(lambda: device.runtime.reason == "deadman released", "the deadman seen released after the resume")
    assert await observer.targets() == (0, 0)


async def test_priorities_between_bindings_and_clients(
    client: Client, gateway: InProcessGateway, sdl: SdlBackend, pad: list[VirtualPad], observer: Observer
) -> None:
    motors = "hwgateway/ThymioMotors"
    slow = binding(gateway, "slow")
    if slow.runtime.stopped:  # by the STOP ALL test, when it ran
        await client.ok("command", device="slow", type="hwgateway/BindingResume", data={})
        await until(lambda: slow.runtime.reason == "deadman released", "slow's deadman seen released")
    await stick(sdl, pad, FULL_UP, l1=True, r1=True)  # both bindings' deadmen: drive (100) wins over slow (10)
    await observer.until((300, 300), "drive wins over slow")
    await until(lambda: slow.runtime.state == "yielded", "slow yields")
    refused = await client.error("command", device="thymio", type=motors, data={"left": 1, "right": 1})
    assert refused["code"] == "locked"
    assert "driven by binding:drive at priority 100" in refused["message"]
    await stick(sdl, pad, FULL_UP, l1=False, r1=True)  # drive's safe output, then slow takes the target
    await observer.until((100, 100), "slow drives once drive stopped")
    # A client (priority 50) takes over from slow (10); slow's deadman released meanwhile: its safe
    # output must not clobber the client's command.
    await client.ok("command", device="thymio", type=motors, data={"left": 42, "right": 43})
    await stick(sdl, pad, FULL_UP)
    await ticks_pass(slow, 3)
    assert await observer.targets() == (42, 43)
    await client.ok("command", device="thymio", type=motors, data={"left": 0, "right": 0})
    await observer.until((0, 0), "the client stopped")


async def test_sigterm_stops_the_robot(
    gateway: InProcessGateway, playground: Playground, sdl: SdlBackend, pad: list[VirtualPad], observer: Observer
) -> None:
    await drive(sdl, pad, observer, "driving before SIGTERM")
    assert await gateway.stop() == 0
    await observer.open_own_link(playground)
    await observer.until((0, 0), "SIGTERM")
    await stick(sdl, pad)
