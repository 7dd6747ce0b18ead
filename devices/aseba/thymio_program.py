"""The gateway's own Thymio II program, generated against a node's live description.

Every variable address, native index and local event id is looked up by name in the description,
so the same generator serves firmware 14 robots and asebaplayground's simulated Thymio (they
differ). The program keeps the values of the last command of each kind in `gw.*` variables,
readable by name with GetVariable.

Global events (index = event id), host to robot:

====  ======================  =======================================================================
 id    name                    words
====  ======================  =======================================================================
  0    set_led                 group (thymio_msgs/Led ids 0..6), then 8 intensities 0..32
  1    set_led_gesture         gesture, leds, wave, period ms, length, mirror, mask[8] (0/1)
  2    play_sound              frequency Hz, duration in 1/60 s
  3    play_system_sound       sound number (-1 stops)
  4    set_comm_payload        the 11-bit value the IR transmitters send
  5    enable_comm             0/1
  6    set_speed               left, right motor targets (-500..500)
  7-9  set_led_top/            red, green, blue 0..32
       bottom_left/right
====  ======================  =======================================================================

Robot to host: 10 ``state`` (every `state_period_ms`: the 5 buttons, prox.horizontal[7],
prox.ground.delta[2], acc[3], temperature in 0.1 degC, left and right motor speeds) and 11
``comm`` (on each IR message: prox.comm.rx, then the 7 payloads and 7 intensities when the
firmware has them, zeros otherwise).

Gestures are animated by the robot on timer0 every `GESTURE_TICK_MS`: the wave's phase runs in
1/32768 of a period; LED i is offset by i/length periods (mirrored about LED `mirror` when it is
non-zero), RECT lights it fully for the first half of the period, HARMONIC follows a cosine.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.aseba.bytecode import Assembler, Binary
from protocols.aseba.description import NodeDescription, Variable

EVENTS = (
    "set_led",
    "set_led_gesture",
    "play_sound",
    "play_system_sound",
    "set_comm_payload",
    "enable_comm",
    "set_speed",
    "set_led_top",
    "set_led_bottom_left",
    "set_led_bottom_right",
    "state",
    "comm",
)
EVENT_ID = {name: index for index, name in enumerate(EVENTS)}
#: Words of the events the host sends.
EVENT_SIZES = {
    "set_led": 9,
    "set_led_gesture": 14,
    "play_sound": 2,
    "play_system_sound": 1,
    "set_comm_payload": 1,
    "enable_comm": 1,
    "set_speed": 2,
    "set_led_top": 3,
    "set_led_bottom_left": 3,
    "set_led_bottom_right": 3,
}
#: LED groups of thymio_msgs/Led (index = id): native name and LED count.
LED_GROUPS = (
    ("leds.circle", 8),
    ("leds.prox.h", 8),
    ("leds.buttons", 4),
    ("leds.prox.v", 2),
    ("leds.temperature", 2),
    ("leds.sound", 1),
    ("leds.rc", 1),
)
#: The three groups a LedGesture can animate (LedGesture.CIRCLE, PROXIMITY, BUTTONS).
GESTURE_GROUPS = 3
GESTURE_TICK_MS = 20
#: Variables in the `state` event, in order.
STATE_VARIABLES = (
    "button.backward",
    "button.left",
    "button.center",
    "button.forward",
    "button.right",
    "prox.horizontal",
    "prox.ground.delta",
    "acc",
    "temperature",
    "motor.left.speed",
    "motor.right.speed",
)
STATE_SIZE = 20
COMM_SIZE = 15
#: What each word of the events the robot sends holds, in order (clients label event data with it).
EVENT_WORDS = {
    "state": (
        *STATE_VARIABLES[:5],
        *(f"prox.horizontal[{i}]" for i in range(7)),
        *(f"prox.ground.delta[{i}]" for i in range(2)),
        *(f"acc[{i}]" for i in range(3)),
        *STATE_VARIABLES[8:],
    ),
    "comm": (
        "prox.comm.rx",
        *(f"prox.comm.rx._payloads[{i}]" for i in range(7)),
        *(f"prox.comm.rx._intensities[{i}]" for i in range(7)),
    ),
}
#: Program variables (name, words), allocated after the node's named variables.
PROGRAM_VARIABLES = (
    ("gw.led", 8 * len(LED_GROUPS)),
    ("gw.led_top", 3),
    ("gw.led_bottom_left", 3),
    ("gw.led_bottom_right", 3),
    ("gw.gesture", 14),
    ("gw.sound", 2),
    ("gw.system_sound", 1),
    ("gw.comm_tx", 1),
    ("gw.comm_enable", 1),
    ("gw.speed", 2),
    ("gw.state", STATE_SIZE),
    ("gw.comm", COMM_SIZE),
    ("gw.frame", 8),
    ("gw.phase", 1),
    ("gw.step", 1),
    ("gw.length", 1),
    ("gw.p", 1),
    ("gw.offset", 1),
    ("gw.value", 1),
    ("gw.k", 4),
    ("gw.zero", 1),
)
# gw.k holds the constants muldiv takes by address: [tick ms, 32767, scratch, scratch].


@dataclass(frozen=True, slots=True)
class ThymioProgram:
    """A generated program: its bytecode, global event names, and its variables by name."""

    bytecode: tuple[int, ...]
    events: tuple[str, ...]
    variables: dict[str, Variable]


class _Generator:
    def __init__(self, description: NodeDescription, state_period_ms: int) -> None:
        self.d = description
        self.asm = Assembler()
        self.state_period_ms = state_period_ms
        address = description.user_data_start
        self.vars: dict[str, Variable] = {}
        for name, size in PROGRAM_VARIABLES:
            self.vars[name] = Variable(name, address, size)
            address += size
        if address > description.variables_size:
            raise ValueError(
                f"the program needs {address} variable words; "
                f"node {description.name!r} has {description.variables_size}"
            )
        self.args = description.variable("event.args").address

    def at(self, name: str, index: int = 0) -> int:
        """Address of word `index` of a program or node variable."""
        variable = self.vars.get(name) or self.d.variable(name)
        if not 0 <= index < variable.size:
            raise ValueError(f"{name}[{index}] is outside its {variable.size} words")
        return variable.address + index

    def native(self, name: str, addresses: list[int], template_sizes: tuple[int, ...] = ()) -> None:
        self.asm.call_native(self.d.native_index(name), addresses, template_sizes)

    def copy_args(self, target: str, count: int, first_arg: int = 0) -> None:
        for i in range(count):
            self.asm.load(self.args + first_arg + i)
            self.asm.store(self.at(target, i))

    def set_var(self, name: str, value: int, index: int = 0) -> None:
        self.asm.push(value)
        self.asm.store(self.at(name, index))

    def generate(self) -> ThymioProgram:
        asm = self.asm
        self.init()
        self.set_led()
        self.set_led_gesture()
        self.gesture_tick()
        # play_sound: sound.freq(Hz, 1/60 s)
        asm.handler(EVENT_ID["play_sound"])
        self.copy_args("gw.sound", 2)
        self.native("sound.freq", [self.args, self.args + 1])
        asm.stop()
        asm.handler(EVENT_ID["play_system_sound"])
        self.copy_args("gw.system_sound", 1)
        self.native("sound.system", [self.args])
        asm.stop()
        asm.handler(EVENT_ID["set_comm_payload"])
        self.copy_args("gw.comm_tx", 1)
        asm.load(self.args)
        asm.store(self.at("prox.comm.tx"))
        asm.stop()
        asm.handler(EVENT_ID["enable_comm"])
        self.copy_args("gw.comm_enable", 1)
        self.native("prox.comm.enable", [self.args])
        asm.stop()
        asm.handler(EVENT_ID["set_speed"])
        self.copy_args("gw.speed", 2)
        for i, target in enumerate(("motor.left.target", "motor.right.target")):
            asm.load(self.args + i)
            asm.store(self.at(target))
        asm.stop()
        for event, native, variable in (
            ("set_led_top", "leds.top", "gw.led_top"),
            ("set_led_bottom_left", "leds.bottom.left", "gw.led_bottom_left"),
            ("set_led_bottom_right", "leds.bottom.right", "gw.led_bottom_right"),
        ):
            asm.handler(EVENT_ID[event])
            self.copy_args(variable, 3)
            self.native(native, [self.args, self.args + 1, self.args + 2])
            asm.stop()
        self.state()
        self.comm()
        return ThymioProgram(asm.assemble(), EVENTS, dict(self.vars))

    def init(self) -> None:
        asm = self.asm
        asm.handler(0xFFFF)
        for name, size in PROGRAM_VARIABLES:
            for i in range(size):
                self.set_var(name, 0, i)
        self.set_var("gw.k", GESTURE_TICK_MS, 0)
        self.set_var("gw.k", 32767, 1)
        self.set_var("gw.length", 1)
        self.set_var("timer.period", 0, 0)
        self.set_var("timer.period", self.state_period_ms, 1)
        asm.stop()

    def set_led(self) -> None:
        asm = self.asm
        asm.handler(EVENT_ID["set_led"])
        for group, (native, count) in enumerate(LED_GROUPS):
            skip = asm.new_label("led")
            asm.load(self.args)
            asm.push(group)
            asm.branch_unless(Binary.EQUAL, skip)
            for i in range(8):
                asm.load(self.args + 1 + i)
                asm.store(self.at("gw.led", group * 8 + i))
            self.native(native, [self.args + 1 + i for i in range(count)])
            asm.stop()
            asm.label(skip)
        asm.stop()

    def set_led_gesture(self) -> None:
        asm = self.asm
        asm.handler(EVENT_ID["set_led_gesture"])
        self.copy_args("gw.gesture", 14)
        on = asm.new_label("gesture_on")
        asm.load(self.at("gw.gesture", 0))
        asm.push(0)
        asm.branch_unless(Binary.EQUAL, on)
        # OFF: stop the timer and clear the animated group.
        self.set_var("timer.period", 0, 0)
        self.show_frame(clear=True)
        asm.stop()
        asm.label(on)
        # length = max(length, 1); step = 20 ms * 32767 / period (phase units per tick)
        self.set_var("gw.length", 1)
        keep = asm.new_label("len")
        asm.load(self.at("gw.gesture", 4))
        asm.push(0)
        asm.branch_unless(Binary.BIGGER_THAN, keep)
        asm.load(self.at("gw.gesture", 4))
        asm.store(self.at("gw.length"))
        asm.label(keep)
        period_ok = asm.new_label("period")
        asm.load(self.at("gw.gesture", 3))
        asm.push(GESTURE_TICK_MS)
        asm.branch_unless(Binary.SMALLER_THAN, period_ok)
        self.set_var("gw.gesture", GESTURE_TICK_MS, 3)
        asm.label(period_ok)
        self.native(
            "math.muldiv",
            [self.at("gw.step"), self.at("gw.k", 0), self.at("gw.k", 1), self.at("gw.gesture", 3)],
            (1,),
        )
        self.set_var("gw.phase", 0)
        self.set_var("timer.period", GESTURE_TICK_MS, 0)
        asm.stop()

    def show_frame(self, clear: bool = False) -> None:
        """Call the native of the gesture's group (gw.gesture[1]) with gw.frame (or zeros)."""
        asm = self.asm
        end = asm.new_label("frame_end")
        for group in range(GESTURE_GROUPS):
            native, count = LED_GROUPS[group]
            skip = asm.new_label("frame")
            asm.load(self.at("gw.gesture", 1))
            asm.push(group)
            asm.branch_unless(Binary.EQUAL, skip)
            addresses = [self.at("gw.zero") if clear else self.at("gw.frame", i) for i in range(count)]
            self.native(native, addresses)
            asm.jump(end)
            asm.label(skip)
        asm.label(end)

    def gesture_tick(self) -> None:
        asm = self.asm
        asm.handler(self.d.local_event_id("timer0"))
        # phase = (phase + step) mod 32768
        asm.load(self.at("gw.phase"))
        asm.load(self.at("gw.step"))
        asm.binary(Binary.ADD)
        asm.push(0x7FFF)
        asm.binary(Binary.BIT_AND)
        asm.store(self.at("gw.phase"))
        for i in range(8):
            self.led_value(i)
        self.show_frame()
        asm.stop()

    def led_value(self, i: int) -> None:
        """gw.frame[i] = intensity (0..32) of LED i at the current phase."""
        asm = self.asm
        # p = i, mirrored about LED `mirror` (gw.gesture[5]) when mirror > 0 and i > mirror
        self.set_var("gw.p", i)
        plain = asm.new_label("plain")
        asm.load(self.at("gw.gesture", 5))
        asm.push(0)
        asm.branch_unless(Binary.BIGGER_THAN, plain)
        asm.push(i)
        asm.load(self.at("gw.gesture", 5))
        asm.branch_unless(Binary.BIGGER_THAN, plain)
        asm.load(self.at("gw.gesture", 5))
        asm.push(2)
        asm.binary(Binary.MULT)
        asm.push(i)
        asm.binary(Binary.SUB)
        asm.store(self.at("gw.p"))
        asm.label(plain)
        # offset = p * 32767 / length; phase of this LED = (phase + offset) mod 32768
        self.native(
            "math.muldiv",
            [self.at("gw.offset"), self.at("gw.p"), self.at("gw.k", 1), self.at("gw.length")],
            (1,),
        )
        asm.load(self.at("gw.phase"))
        asm.load(self.at("gw.offset"))
        asm.binary(Binary.ADD)
        asm.push(0x7FFF)
        asm.binary(Binary.BIT_AND)
        asm.store(self.at("gw.value"))
        harmonic = asm.new_label("harmonic")
        done = asm.new_label("value_done")
        asm.load(self.at("gw.gesture", 2))
        asm.push(0)
        asm.branch_unless(Binary.EQUAL, harmonic)
        # RECT: 32 for the first half of the period, else 0: (value < 16384) * 32
        asm.load(self.at("gw.value"))
        asm.push(16384)
        asm.binary(Binary.SMALLER_THAN)
        asm.push(32)
        asm.binary(Binary.MULT)
        asm.store(self.at("gw.value"))
        asm.jump(done)
        asm.label(harmonic)
        # HARMONIC: 16 + cos(2 pi value / 32768) * 16, with math.cos's angle unit pi/32768
        asm.load(self.at("gw.value"))
        asm.push(1)
        asm.binary(Binary.SHIFT_LEFT)
        asm.store(self.at("gw.k", 2))
        self.native("math.cos", [self.at("gw.k", 3), self.at("gw.k", 2)], (1,))
        asm.load(self.at("gw.k", 3))
        asm.push(11)
        asm.binary(Binary.SHIFT_RIGHT)
        asm.push(16)
        asm.binary(Binary.ADD)
        asm.store(self.at("gw.value"))
        asm.label(done)
        # masked LEDs stay dark: frame[i] = value * mask[i]
        asm.load(self.at("gw.value"))
        asm.load(self.at("gw.gesture", 6 + i))
        asm.binary(Binary.MULT)
        asm.store(self.at("gw.frame", i))

    def state(self) -> None:
        asm = self.asm
        asm.handler(self.d.local_event_id("timer1"))
        index = 0
        for name in STATE_VARIABLES:
            variable = self.d.variable(name)
            for i in range(variable.size):
                asm.load(variable.address + i)
                asm.store(self.at("gw.state", index))
                index += 1
        if index != STATE_SIZE:
            raise ValueError(f"state has {index} words, expected {STATE_SIZE}")
        asm.emit(EVENT_ID["state"], self.at("gw.state"), STATE_SIZE)
        asm.stop()

    def comm(self) -> None:
        asm = self.asm
        asm.handler(self.d.local_event_id("prox.comm"))
        asm.load(self.at("prox.comm.rx"))
        asm.store(self.at("gw.comm", 0))
        for offset, name in ((1, "prox.comm.rx._payloads"), (8, "prox.comm.rx._intensities")):
            variable = self.d.variables.get(name)
            if variable is None:
                continue  # the simulator has no per-sensor payloads: their words stay 0
            for i in range(min(7, variable.size)):
                asm.load(variable.address + i)
                asm.store(self.at("gw.comm", offset + i))
        asm.emit(EVENT_ID["comm"], self.at("gw.comm"), COMM_SIZE)
        asm.stop()


def generate(description: NodeDescription, state_period_ms: int = 100) -> ThymioProgram:
    """The gateway program for a `thymio-II` node; `state_period_ms` paces the `state` event.

    Raise `KeyError` or `ValueError` when the node lacks a variable, native or event the program
    needs, or room for its variables or bytecode.
    """
    program = _Generator(description, state_period_ms).generate()
    if len(program.bytecode) > description.bytecode_size:
        raise ValueError(
            f"the program has {len(program.bytecode)} words; "
            f"node {description.name!r} takes {description.bytecode_size}"
        )
    return program
