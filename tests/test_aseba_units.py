"""Targets, thymio_msgs conversions and program generation, without any peer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devices.aseba import thymio
from devices.aseba.thymio_program import EVENT_ID, generate
from devices.aseba.transport import Target, parse_target
from devices.sim.thymio import SimulatedThymio
from gateway.errors import InvalidArgument
from gateway.messages import generic
from gateway.messages import thymio as msgs
from gateway.messages.common import Duration
from protocols.aseba.description import DescriptionAssembler, NodeDescription
from protocols.aseba.framing import Frame
from protocols.aseba.messages import (
    Description,
    LocalEventDescription,
    NamedVariableDescription,
    NativeFunctionDescription,
    decode,
)

VECTOR = Path(__file__).parent / "data" / "thymio-playground-description.json"


def playground_description() -> NodeDescription:
    assembler = DescriptionAssembler()
    for type_, payload in json.loads(VECTOR.read_text()):
        part = decode(Frame(1, type_, bytes.fromhex(payload)))
        assert isinstance(
            part, Description | NamedVariableDescription | LocalEventDescription | NativeFunctionDescription
        )
        assembler.add(part)
    return assembler.result()


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("tcp:127.0.0.1;33333", Target("tcp", host="127.0.0.1", port=33333)),
        ("tcp:host=localhost;port=33340", Target("tcp", host="localhost", port=33340)),
        ("tcp:robot.local", Target("tcp", host="robot.local", port=33333)),
        ("ser:device=/dev/ttyACM0", Target("serial", device="/dev/ttyACM0")),
        ("ser:device=/dev/ttyACM1;baud=115200;dtr=true", Target("serial", device="/dev/ttyACM1")),
        ("ser:/dev/ttyUSB0", Target("serial", device="/dev/ttyUSB0")),
        ("/dev/ttyACM0", Target("serial", device="/dev/ttyACM0")),
    ],
)
def test_dashel_targets(text: str, target: Target) -> None:
    assert parse_target(text) == target


@pytest.mark.parametrize("text", ["udp:1.2.3.4;5", "tcp:host;port", "tcp:;33333", "tcp:h;70000", "ser:", "thymio"])
def test_bad_targets_are_named(text: str) -> None:
    with pytest.raises(ValueError, match="target"):
        parse_target(text)


def test_thymio_commands_become_program_events() -> None:
    assert thymio.led(msgs.Led(id=2, values=(1.0, 0.5, 0.26))) == [(EVENT_ID["set_led"], (2, 32, 16, 8, 0, 0, 0, 0, 0))]
    with pytest.raises(InvalidArgument, match="4 LEDs"):
        thymio.led(msgs.Led(id=2, values=(1.0,) * 5))
    gesture = thymio.led_gesture(msgs.LedGesture(gesture=1, wave=1, leds=1, period=0.02, length=12, mask=(True, False)))
    assert gesture == [(EVENT_ID["set_led_gesture"], (1, 1, 1, 20, 12, 0, 1, 0, 1, 1, 1, 1, 1, 1))]
    tone = thymio.thymio_sound(msgs.Sound(duration=Duration(sec=2, nanosec=500_000_000), frequency=440.7))
    assert tone == [(EVENT_ID["play_sound"], (440, 150))]
    assert thymio.generic_sound(generic.Sound(frequency_hz=0.0, duration_s=0.0)) == [(EVENT_ID["play_sound"], (1, 1))]
    assert thymio.generic_sound(generic.Sound(volume=0.0)) == []
    assert thymio.system_sound(msgs.SystemSound(sound=-1)) == [(EVENT_ID["play_system_sound"], (-1,))]
    assert thymio.comm(msgs.Comm(value=2047)) == [
        (EVENT_ID["set_comm_payload"], (2047,)),
        (EVENT_ID["enable_comm"], (1,)),
    ]
    with pytest.raises(InvalidArgument, match="11-bit"):
        thymio.comm(msgs.Comm(value=2048))
    assert thymio.generic_led(generic.Led(index=1, rgb=(1.0, 0.0, 0.5))) == [
        (EVENT_ID["set_led_bottom_left"], (32, 0, 16))
    ]
    with pytest.raises(InvalidArgument, match="RGB"):
        thymio.generic_led(generic.Led(index=3))
    received = thymio.comm_message((7, 1, 2, 3, 4, 5, 6, 7, 10, 20, 30, 40, 50, 60, 70))
    assert received == msgs.Comm(value=7, payloads=(1, 2, 3, 4, 5, 6, 7), intensities=(10, 20, 30, 40, 50, 60, 70))
    assert thymio.buttons((0, 1, 0, 0, 1, 999)).buttons == (0, 1, 0, 0, 1)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (msgs.LedGesture(gesture=1, period=0.001), r"data.period: 0.001 s is outside \[0.02, 32.767\] s"),
        (msgs.LedGesture(gesture=1, period=1e-300), r"data.period: 1e-300 s is outside \[0.02, 32.767\] s"),
        (msgs.LedGesture(gesture=1, period=3600.0), r"data.period: 3600 s is outside \[0.02, 32.767\] s"),
        (msgs.LedGesture(gesture=1, period=1.0, length=65535), "data.length: 65535 is above the maximum 32767"),
        (msgs.Sound(duration=Duration(sec=-1), frequency=440.0), r"data.duration: -1 s is outside \[0, 546.1\] s"),
        (msgs.Sound(duration=Duration(sec=2**31 - 1), frequency=440.0), "data.duration: 2.14748e[+]09 s is outside"),
        (msgs.Sound(duration=Duration(sec=1), frequency=3.4e38), r"data.frequency: 3.4e\+38 Hz is outside"),
        (msgs.Sound(duration=Duration(sec=1), frequency=-1.0), "data.frequency: -1 Hz is outside"),
    ],
)
def test_timed_thymio_commands_out_of_range_are_refused_by_name(command: object, message: str) -> None:
    convert = thymio.led_gesture if isinstance(command, msgs.LedGesture) else thymio.thymio_sound
    with pytest.raises(InvalidArgument, match=message):
        convert(command)  # type: ignore[arg-type]


def test_timed_thymio_commands_at_their_limits() -> None:
    longest = thymio.led_gesture(msgs.LedGesture(gesture=1, period=32.767, length=32767))
    assert longest[0][1][3:5] == (32767, 32767)
    # OFF ignores the period, as the robot's program does.
    assert thymio.led_gesture(msgs.LedGesture(gesture=0, period=0.0))[0][1][3] == thymio.MIN_GESTURE_PERIOD_MS
    assert thymio.thymio_sound(msgs.Sound(duration=Duration(sec=546), frequency=32767.0)) == [
        (EVENT_ID["play_sound"], (32767, 32760))
    ]
    assert thymio.generic_sound(generic.Sound(frequency_hz=20000.0, duration_s=60.0)) == [
        (EVENT_ID["play_sound"], (20000, 3600))
    ]


def test_program_is_generated_against_each_description() -> None:
    real = generate(playground_description())
    simulated = generate(SimulatedThymio().description)
    # The same program, compiled for different native tables and variable layouts.
    assert real.events == simulated.events
    assert real.bytecode != simulated.bytecode
    assert real.variables["gw.led"].address == playground_description().user_data_start
    without_leds = SimulatedThymio().description
    natives = tuple(n for n in without_leds.natives if n.name != "leds.rc")
    broken = NodeDescription(
        without_leds.name,
        without_leds.protocol_version,
        without_leds.bytecode_size,
        without_leds.stack_size,
        without_leds.variables_size,
        without_leds.variables,
        without_leds.local_events,
        natives,
    )
    with pytest.raises(KeyError, match=r"leds\.rc"):
        generate(broken)
