"""A simulated Thymio II: a node speaking the real Aseba protocol over TCP on 127.0.0.1.

It runs bytecode in the Python Aseba VM (`protocols.aseba.vm`) with a Thymio-like description
(the variables, local events and LED/sound natives of a Thymio, with native indices of its own),
answers discovery, description, GetVariables (split into 47-word frames like a real Thymio's
`ASEBA_LIMITED_MESSAGE_SIZE` firmware), SetVariables, SetBytecode/Run/Pause/Stop/Reset, and runs
the timer0/timer1 local events every `TICK_S`. Any number of clients may connect; every frame the
node sends goes to all of them. For the demo, fast tests and the benchmark. `press` holds a touch
button as a person would; `demo` presses one after another (half a second every two seconds).

It is protocol 6: GetDeviceInfo(UUID) is answered with `uuid` (None: not answered, as Debian's
playground does not), so two devices given one UUID are one robot on two links.

Fault injection (tests): `mute_after_description_frames` makes the node go silent for `mute_s`
seconds part-way through its next description; `send_garbage` writes bytes that are no valid frame to every client.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
import time
from dataclasses import dataclass, field
from uuid import UUID

from protocols.aseba.description import DescriptionAssembler, NodeDescription
from protocols.aseba.framing import FrameReader
from protocols.aseba.messages import (
    Description,
    DeviceInfo,
    DeviceInfoType,
    LocalEventDescription,
    Message,
    MessageType,
    NamedVariableDescription,
    NativeFunctionDescription,
    UserMessage,
    WordMessage,
    decode,
    encode,
)
from protocols.aseba.natives import STANDARD_NATIVES, STANDARD_PARAMETERS
from protocols.aseba.vm import AsebaVM, Native, s16
from protocols.errors import ProtocolError

log = logging.getLogger(__name__)

#: Simulation step (s): timers, motors and the VM advance once per step.
TICK_S = 0.01
#: Words per Variables frame, as on a real Thymio (ASEBA_LIMITED_MESSAGE_SIZE).
VARIABLES_FRAME_WORDS = 47
PROTOCOL_VERSION = 6

#: The touch buttons `press` takes, in the demo script's order.
BUTTON_NAMES = ("forward", "backward", "left", "right", "center")
#: The demo's button script: one button pressed for DEMO_PRESS_S of every DEMO_STEP_S.
DEMO_STEP_S = 2.0
DEMO_PRESS_S = 0.5
#: Named variables of the simulated Thymio (name, words), in address order.
VARIABLES = (
    ("_id", 1),
    ("event.source", 1),
    ("event.args", 32),
    ("_productId", 1),
    ("_fwversion", 2),
    ("button.backward", 1),
    ("button.left", 1),
    ("button.center", 1),
    ("button.forward", 1),
    ("button.right", 1),
    ("prox.horizontal", 7),
    ("prox.comm.rx", 1),
    ("prox.comm.tx", 1),
    ("prox.ground.ambiant", 2),
    ("prox.ground.reflected", 2),
    ("prox.ground.delta", 2),
    ("motor.left.target", 1),
    ("motor.right.target", 1),
    ("motor.left.speed", 1),
    ("motor.right.speed", 1),
    ("motor.left.pwm", 1),
    ("motor.right.pwm", 1),
    ("acc", 3),
    # A real Thymio II (firmware 14) also names its LED buffers as variables (tdmclient writes them).
    ("leds.top", 3),
    ("leds.bottom.left", 3),
    ("leds.bottom.right", 3),
    ("leds.circle", 8),
    ("temperature", 1),
    ("rc5.address", 1),
    ("rc5.command", 1),
    ("mic.intensity", 1),
    ("mic.threshold", 1),
    ("timer.period", 2),
    ("sd.present", 1),
)
LOCAL_EVENTS = (
    "button.backward",
    "button.left",
    "button.center",
    "button.forward",
    "button.right",
    "buttons",
    "prox",
    "prox.comm",
    "tap",
    "acc",
    "mic",
    "sound.finished",
    "temperature",
    "rc5",
    "motor",
    "timer0",
    "timer1",
)
#: Thymio natives after the standard ones (parameter sizes); LED intensities 0..32.
THYMIO_NATIVES = (
    ("sound.system", (1,)),
    ("leds.circle", (1,) * 8),
    ("leds.top", (1, 1, 1)),
    ("leds.bottom.right", (1, 1, 1)),
    ("leds.bottom.left", (1, 1, 1)),
    ("sound.freq", (1, 1)),
    ("leds.buttons", (1,) * 4),
    ("leds.prox.h", (1,) * 8),
    ("leds.prox.v", (1, 1)),
    ("leds.rc", (1,)),
    ("leds.sound", (1,)),
    ("leds.temperature", (1, 1)),
    ("prox.comm.enable", (1,)),
)
VM_SIZES = {"bytecode": 1534, "stack": 32, "variables": 586}


def description_messages(node_id: int) -> list[Message]:
    """The description frames the simulated Thymio sends (header, variables, events, natives)."""
    natives = [(name, STANDARD_PARAMETERS[name]) for name in STANDARD_NATIVES] + list(THYMIO_NATIVES)
    messages: list[Message] = [
        Description(
            node_id,
            "thymio-II",
            PROTOCOL_VERSION,
            VM_SIZES["bytecode"],
            VM_SIZES["stack"],
            VM_SIZES["variables"],
            len(VARIABLES),
            len(LOCAL_EVENTS),
            len(natives),
        )
    ]
    messages += [NamedVariableDescription(node_id, size, name) for name, size in VARIABLES]
    messages += [LocalEventDescription(node_id, name, "") for name in LOCAL_EVENTS]
    messages += [
        NativeFunctionDescription(node_id, name, "", tuple((size, f"p{i}") for i, size in enumerate(sizes)))
        for name, sizes in natives
    ]
    return messages


def description_of(messages: list[Message]) -> NodeDescription:
    """Assemble description frames (used to size the VM from what the node announces)."""
    assembler = DescriptionAssembler()
    for message in messages:
        assert isinstance(
            message, Description | NamedVariableDescription | LocalEventDescription | NativeFunctionDescription
        )
        assembler.add(message)
    return assembler.result()


@dataclass
class ThymioOutputs:
    """What the simulated robot shows: LED intensities (0..32) by native name, and its sounds."""

    leds: dict[str, tuple[int, ...]] = field(default_factory=dict)
    tone: tuple[int, int] | None = None  # (Hz, duration in 1/60 s)
    system_sound: int | None = None
    comm_enabled: bool = False


def thymio_natives(outputs: ThymioOutputs) -> dict[str, Native]:
    """The Thymio LED, sound and IR natives, recording their effect in `outputs` (by name)."""

    def leds(name: str, count: int) -> Native:
        def native(vm: AsebaVM) -> None:
            addresses = [vm.pop() for _ in range(count)]
            outputs.leds[name] = tuple(max(0, min(32, vm.variables[a])) for a in addresses)

        return native

    def tone(vm: AsebaVM) -> None:
        frequency, duration = vm.pop(), vm.pop()
        outputs.tone = (vm.variables[frequency], vm.variables[duration])

    def system(vm: AsebaVM) -> None:
        outputs.system_sound = vm.variables[vm.pop()]

    def comm(vm: AsebaVM) -> None:
        outputs.comm_enabled = bool(vm.variables[vm.pop()])

    natives: dict[str, Native] = {"sound.freq": tone, "sound.system": system, "prox.comm.enable": comm}
    for name, sizes in THYMIO_NATIVES:
        if name.startswith("leds."):
            natives[name] = leds(name, len(sizes))
    return natives


class SimulatedThymio:
    """A Thymio II node `node_id` on a TCP port of 127.0.0.1; `start`, then connect to `port`."""

    def __init__(self, node_id: int = 1, port: int = 0, demo: bool = False, uuid: UUID | None = None) -> None:
        self.node_id = node_id
        #: What GetDeviceInfo(UUID) answers (None: it is not answered).
        self.uuid = uuid
        #: The demo's script: one button after another, pressed for DEMO_PRESS_S of every DEMO_STEP_S.
        self.demo = demo
        #: Buttons pressed by `press` (a person at the dashboard), by name: when each is released (monotonic s).
        self._pressed: dict[str, float] = {}
        self._started = time.monotonic()
        self.host = "127.0.0.1"
        self.port = port
        self.description_frames = description_messages(node_id)
        self.description = description_of(self.description_frames)
        self.outputs = ThymioOutputs()
        self.vm = AsebaVM(node_id, self.description, {**STANDARD_NATIVES, **thymio_natives(self.outputs)})
        self._init_variables()
        self.clients: set[asyncio.StreamWriter] = set()
        self.mute_after_description_frames: int | None = None
        self.mute_s = 5.0
        self.muted_until = 0.0
        self._server: asyncio.Server | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._timer_due = [0.0, 0.0]

    # -- robot state -------------------------------------------------------------------------------

    def receive_ir(self, value: int) -> None:
        """An IR message `value` arrives from another robot: set prox.comm.rx, run `prox.comm`."""
        self.set("prox.comm.rx", value)
        if self.vm.setup_event(self.description.local_event_id("prox.comm")):
            self.vm.run()
        self._flush_vm()

    def _init_variables(self) -> None:
        self.set("_productId", 8)
        self.set("_fwversion", 14, 0)
        self.set("temperature", 220)
        self.set("acc", 22, 2)  # 1 g on the z axis
        self.set("prox.ground.reflected", 900, 0)
        self.set("prox.ground.reflected", 900, 1)

    def get(self, name: str, index: int = 0) -> int:
        """Word `index` of variable `name`."""
        return self.vm.variables[self.description.variable(name).address + index]

    def values(self, name: str) -> list[int]:
        """All words of variable `name`."""
        variable = self.description.variable(name)
        return self.vm.variables[variable.address : variable.address + variable.size]

    def set(self, name: str, value: int, index: int = 0) -> None:
        """Set word `index` of variable `name` (a sensor reading, say)."""
        self.vm.variables[self.description.variable(name).address + index] = value

    def press(self, name: str, seconds: float) -> None:
        """Hold button `name` (one of `BUTTON_NAMES`) for `seconds` (0: release it now); `ValueError` if unknown."""
        if name not in BUTTON_NAMES:
            raise ValueError(f"no button {name!r}; a Thymio has {', '.join(BUTTON_NAMES)}")
        self._pressed[name] = time.monotonic() + seconds

    def _buttons(self, now: float) -> None:
        """Set the `button.*` variables from `press` and, in the demo, the script (what its touch pads read)."""
        held = {name for name, until in self._pressed.items() if until > now}
        if self.demo:
            step, into = divmod(now - self._started, DEMO_STEP_S)
            if into < DEMO_PRESS_S:
                held.add(BUTTON_NAMES[int(step) % len(BUTTON_NAMES)])
        for name in BUTTON_NAMES:
            self.set(f"button.{name}", int(name in held))

    # -- serving -----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on 127.0.0.1 (`port` 0 picks a free one) and start simulating."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ticker = asyncio.create_task(self._tick(), name=f"sim-thymio-{self.node_id}")

    async def stop(self) -> None:
        """Close every client and stop."""
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        if self._server is not None:
            self._server.close()
        for writer in list(self.clients):
            writer.close()
        if self._server is not None:
            await self._server.wait_closed()

    def send_garbage(self, data: bytes) -> None:
        """Write `data` (not a valid frame) to every client, as line noise would."""
        for writer in self.clients:
            writer.write(data)

    def send(self, message: Message) -> None:
        """Send `message` to every client (unless the node is muted)."""
        self._send(message)

    def _send(self, message: Message) -> None:
        if time.monotonic() < self.muted_until:
            return
        frame = encode(message)
        for writer in list(self.clients):
            writer.write(frame)

    def _flush_vm(self) -> None:
        for message in self.vm.outbox:
            self._send(message)
        self.vm.outbox.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.clients.add(writer)
        frames = FrameReader()
        try:
            while data := await reader.read(4096):
                frames.feed(data)
                while True:
                    try:
                        frame = frames.next()
                        if frame is None:
                            break
                        self._handle(decode(frame))
                    except ProtocolError as error:
                        log.warning("simulated Thymio %d: %s", self.node_id, error)
                self._flush_vm()
        except ConnectionError:
            pass
        finally:
            self.clients.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    def _send_description(self) -> None:
        for count, message in enumerate(self.description_frames):
            if self.mute_after_description_frames is not None and count >= self.mute_after_description_frames:
                self.mute_after_description_frames = None
                self.muted_until = time.monotonic() + self.mute_s  # the robot vanished mid-description
                return
            self._send(message)

    def _handle(self, message: Message) -> None:
        if time.monotonic() < self.muted_until:
            return
        if isinstance(message, UserMessage):
            if message.source != self.node_id:
                self.vm.user_event(message.source, message.type, message.data)
                self.vm.run()
            return
        if not isinstance(message, WordMessage):
            return
        words = message.words
        if message.type is MessageType.LIST_NODES:
            self._send(WordMessage(self.node_id, MessageType.NODE_PRESENT, (PROTOCOL_VERSION,)))
            return
        if message.type is MessageType.GET_DESCRIPTION:
            self._send_description()
            return
        if not words or words[0] != self.node_id:
            return  # addressed to another node
        self._command(message.type, words[1:])

    def _command(self, type_: MessageType, args: tuple[int, ...]) -> None:
        vm = self.vm
        if type_ is MessageType.GET_NODE_DESCRIPTION:
            self._send_description()
        elif type_ is MessageType.GET_VARIABLES and len(args) >= 2:
            start, length = args[0], args[1]
            length = max(0, min(length, len(vm.variables) - start))
            for offset in range(0, length, VARIABLES_FRAME_WORDS):
                chunk = vm.variables[start + offset : start + min(length, offset + VARIABLES_FRAME_WORDS)]
                self._send(WordMessage(self.node_id, MessageType.VARIABLES, (start + offset, *chunk)))
        elif type_ is MessageType.SET_VARIABLES and args:
            start, values = args[0], args[1:]
            end = min(len(vm.variables), start + len(values))
            vm.variables[start:end] = [s16(v) for v in values[: end - start]]
        elif type_ is MessageType.SET_BYTECODE and args:
            try:
                vm.set_bytecode(args[0], args[1:])
            except ValueError as error:
                log.warning("simulated Thymio %d: %s", self.node_id, error)
            self._state()
        elif type_ is MessageType.RUN:
            vm.start()
            self._state()
            vm.run()
        elif type_ in (MessageType.PAUSE, MessageType.STOP):
            vm.stop()
            self._state()
        elif type_ is MessageType.RESET:
            vm.reset()
            self._state()
        elif type_ is MessageType.GET_EXECUTION_STATE:
            self._state()
        elif type_ is MessageType.GET_DEVICE_INFO and args and args[0] == DeviceInfoType.UUID and self.uuid:
            self._send(DeviceInfo(self.node_id, DeviceInfoType.UUID, self.uuid.bytes))

    def _state(self) -> None:
        self._send(WordMessage(self.node_id, MessageType.EXECUTION_STATE_CHANGED, (self.vm.pc, self.vm.flags)))

    async def _tick(self) -> None:
        timer_events = [self.description.local_event_id(f"timer{i}") for i in range(2)]
        while True:
            now = time.monotonic()
            for index in range(2):
                period_ms = self.get("timer.period", index)
                if period_ms <= 0:
                    self._timer_due[index] = 0.0
                elif not self._timer_due[index]:
                    self._timer_due[index] = now + period_ms / 1000
                elif now >= self._timer_due[index]:
                    self._timer_due[index] = max(self._timer_due[index] + period_ms / 1000, now)
                    if self.vm.setup_event(timer_events[index]):
                        self.vm.run()
            for side in ("left", "right"):
                self.set(f"motor.{side}.speed", self.get(f"motor.{side}.target"))
            if self.demo or self._pressed:
                self._buttons(now)
            self._flush_vm()
            await asyncio.sleep(TICK_S)


def stamp_words(nanoseconds: int) -> tuple[int, ...]:
    """A `time.monotonic_ns()` value as four 16-bit words, low word first (for latency benchmarks)."""
    return tuple((nanoseconds >> shift) & 0xFFFF for shift in (0, 16, 32, 48))


def words_stamp(words: list[int] | tuple[int, ...]) -> int:
    """The inverse of `stamp_words` (words may arrive signed)."""
    return sum((word & 0xFFFF) << shift for word, shift in zip(words, (0, 16, 32, 48), strict=False))


async def _main(node_id: int, stamp_hz: float, stamp_event: int) -> None:
    robot = SimulatedThymio(node_id)
    await robot.start()
    print(json.dumps({"event": "listening", "port": robot.port}), flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    stamper: asyncio.Task[None] | None = None
    if stamp_hz > 0:

        async def stamp() -> None:
            while True:
                robot.send(UserMessage(node_id, stamp_event, stamp_words(time.monotonic_ns())))
                await asyncio.sleep(1 / stamp_hz)

        stamper = asyncio.create_task(stamp())
    await reader.read()  # until the parent closes stdin
    if stamper is not None:
        stamper.cancel()
    await robot.stop()


def cli() -> None:
    """`python -m devices.sim.thymio`: serve a simulated Thymio until stdin closes (benchmarks)."""
    parser = argparse.ArgumentParser(description=cli.__doc__)
    parser.add_argument("--node-id", type=int, default=1)
    parser.add_argument("--stamp-hz", type=float, default=0.0, help="emit a monotonic-ns stamp event this often")
    parser.add_argument("--stamp-event", type=int, default=100, help="user event id of the stamp events")
    args = parser.parse_args()
    asyncio.run(_main(args.node_id, args.stamp_hz, args.stamp_event))


if __name__ == "__main__":
    cli()
