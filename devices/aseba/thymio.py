"""thymio_msgs commands as events of the gateway's Thymio program, and its reports as bus messages.

Pure conversions; the adapter sends the (event id, words) pairs and publishes the results.
"""

from __future__ import annotations

import math

from devices.aseba.thymio_program import EVENT_ID, LED_GROUPS
from gateway.errors import InvalidArgument
from gateway.messages import generic, thymio
from gateway.messages.aseba_gateway import ThymioState
from gateway.messages.common import Time, Vector3
from gateway.messages.creos import ControllerState

#: The accelerometer counts 23 steps per g (±32 = ±1.4 g ... the MMA7660's ±1.5 g range).
ACC_STEPS_PER_G = 23
STANDARD_GRAVITY = 9.80665
#: Thymio LED intensities run 0..32 (firmware leds.c MAX_BRIGHTNESS).
LED_MAX = 32
#: Tone durations are counted in 1/60 s by sound.freq.
SOUND_TICKS_PER_S = 60
MAX_WORD = 32767
#: The robot animates gestures every 20 ms: a WAVE period is at least one animation step (ms) and
#: at most what its 16-bit word holds (32.767 s).
MIN_GESTURE_PERIOD_MS = 20
MAX_GESTURE_PERIOD_MS = MAX_WORD
#: The longest tone sound.freq can play: 32767 ticks of 1/60 s (546.1 s); shorter than a tick plays one.
MAX_SOUND_S = MAX_WORD / SOUND_TICKS_PER_S
#: sound.freq takes a 16-bit frequency (Hz); 0 plays the lowest, 1 Hz.
MAX_SOUND_HZ = float(MAX_WORD)

Events = list[tuple[int, tuple[int, ...]]]


def _intensity(value: float) -> int:
    return min(LED_MAX, math.floor(value * LED_MAX))


def led(command: thymio.Led) -> Events:
    """`set_led`: group id, then the group's intensities 0..1 as 0..32, zero-padded to 8."""
    native, count = LED_GROUPS[command.id]
    if len(command.values) > count:
        raise InvalidArgument(
            f"data.values: LED group {command.id} ({native}) has {count} LEDs, got {len(command.values)}"
        )
    values = [_intensity(v) for v in command.values] + [0] * (8 - len(command.values))
    return [(EVENT_ID["set_led"], (command.id, *values))]


def led_gesture(command: thymio.LedGesture) -> Events:
    """`set_led_gesture`: gesture, group, wave, period in ms, length, mirror, mask (missing bits 1).

    A WAVE's `period` must lie in [0.02, 32.767] s and `length` in [0, 32767] LEDs; OFF ignores both.
    """
    period_ms = round(command.period * 1000)
    if command.gesture == thymio.LedGesture.WAVE:
        if not MIN_GESTURE_PERIOD_MS <= period_ms <= MAX_GESTURE_PERIOD_MS:
            raise InvalidArgument(
                f"data.period: {command.period:g} s is outside [{MIN_GESTURE_PERIOD_MS / 1000:g}, "
                f"{MAX_GESTURE_PERIOD_MS / 1000:g}] s (the robot animates every {MIN_GESTURE_PERIOD_MS} ms)"
            )
        if command.length > MAX_WORD:
            raise InvalidArgument(f"data.length: {command.length} is above the maximum {MAX_WORD} LEDs")
    period_ms = min(MAX_GESTURE_PERIOD_MS, max(MIN_GESTURE_PERIOD_MS, period_ms))
    mask = [int(bit) for bit in command.mask] + [1] * (8 - len(command.mask))
    words = (command.gesture, command.leds, command.wave, period_ms, min(command.length, MAX_WORD), command.mirror)
    return [(EVENT_ID["set_led_gesture"], (*words, *mask))]


def sound(frequency_hz: float, duration_s: float, frequency_field: str, duration_field: str) -> Events:
    """`play_sound`: frequency in Hz (at least 1) and duration in 1/60 s (at least one tick).

    Refuses a frequency outside [0, 32767] Hz or a duration outside [0, 546.1] s, naming the field.
    """
    if not 0 <= frequency_hz <= MAX_SOUND_HZ:
        raise InvalidArgument(f"{frequency_field}: {frequency_hz:g} Hz is outside [0, {MAX_SOUND_HZ:g}] Hz")
    if not 0 <= duration_s <= MAX_SOUND_S:
        raise InvalidArgument(
            f"{duration_field}: {duration_s:g} s is outside [0, {MAX_SOUND_S:.1f}] s "
            f"({MAX_WORD} ticks of 1/{SOUND_TICKS_PER_S} s)"
        )
    frequency = max(1, int(frequency_hz))
    ticks = min(MAX_WORD, max(1, int(duration_s * SOUND_TICKS_PER_S)))
    return [(EVENT_ID["play_sound"], (frequency, ticks))]


def thymio_sound(command: thymio.Sound) -> Events:
    """A thymio_msgs/Sound tone."""
    return sound(command.frequency, command.duration.to_seconds(), "data.frequency", "data.duration")


def generic_sound(command: generic.Sound) -> Events:
    """A generic `sound` (the Thymio has no volume control: `volume` only mutes at 0)."""
    if command.volume == 0:
        return []
    return sound(command.frequency_hz, command.duration_s, "data.frequency_hz", "data.duration_s")


def system_sound(command: thymio.SystemSound) -> Events:
    """`play_system_sound` with the sound number (-1 stops)."""
    return [(EVENT_ID["play_system_sound"], (command.sound,))]


def comm(command: thymio.Comm) -> Events:
    """Transmit `value` over IR from now on: set the payload, then enable communication."""
    if not 0 <= command.value < 2048:
        raise InvalidArgument(f"data.value: {command.value} is not an 11-bit IR payload (0..2047)")
    return [(EVENT_ID["set_comm_payload"], (command.value,)), (EVENT_ID["enable_comm"], (1,))]


#: Generic `led` index → body RGB LED event: -1 and 0 the top, 1 bottom left, 2 bottom right.
RGB_EVENTS = {-1: "set_led_top", 0: "set_led_top", 1: "set_led_bottom_left", 2: "set_led_bottom_right"}


def generic_led(command: generic.Led) -> Events:
    """An RGB colour (0..1 per channel) on a body LED, as 0..32 per channel."""
    name = RGB_EVENTS.get(command.index)
    if name is None:
        raise InvalidArgument(f"data.index: {command.index} is not an RGB LED (0 top, 1 bottom left, 2 bottom right)")
    return [(EVENT_ID[name], tuple(_intensity(c) for c in command.rgb))]


_RGB_LED_NAMES = {"set_led_top": "top", "set_led_bottom_left": "bottom left", "set_led_bottom_right": "bottom right"}


def applied(type_name: str, events: Events) -> dict[str, object] | None:
    """What a generic `led` or `sound` became on the robot (the result data); None for other commands."""
    names = {event_id: name for name, event_id in EVENT_ID.items()}
    if type_name == "led":
        event_id, words = events[0]
        led = _RGB_LED_NAMES[names[event_id]]
        return {"led": led, "rgb": list(words), "applied": f"{led} LED at {list(words)} of {LED_MAX} per channel"}
    if type_name == "sound":
        if not events:
            return {"sound": False, "applied": "nothing: volume 0 mutes, and the Thymio has no other volume"}
        frequency, ticks = events[0][1]
        duration_s = round(ticks / SOUND_TICKS_PER_S, 3)
        return {
            "sound": True,
            "frequency_hz": frequency,
            "duration_s": duration_s,
            "applied": f"a {frequency} Hz tone for {duration_s} s (whole Hz, 1/60 s steps, fixed volume)",
        }
    return None


def comm_message(words: tuple[int, ...]) -> thymio.Comm:
    """The thymio_msgs/Comm of a `comm` event (value, 7 payloads, 7 intensities)."""
    padded = (*words, *([0] * 15))[:15]
    return thymio.Comm(value=padded[0], payloads=tuple(padded[1:8]), intensities=tuple(padded[8:15]))


#: The five buttons in `buttons`' order.
BUTTON_NAMES = ("backward", "left", "center", "forward", "right")


def buttons(words: tuple[int, ...], stamp: float = 0.0) -> ControllerState:
    """The five buttons of a `state` event (backward, left, center, forward, right) as ControllerState.

    `stamp`: when the event arrived, in s since the epoch (the robot's events carry no time).
    """
    return ControllerState(timestamp=Time.from_seconds(stamp), buttons=tuple(1 if w else 0 for w in words[:5]))


def state(words: tuple[int, ...], stamp: float) -> ThymioState:
    """A `state` event (layout in `thymio_program`) in SI units; `stamp` in s since the epoch."""
    padded = (*words, *([0] * 20))[:20]
    g = STANDARD_GRAVITY / ACC_STEPS_PER_G
    return ThymioState(
        stamp=Time.from_seconds(stamp),
        buttons=tuple(bool(w) for w in padded[0:5]),
        prox_horizontal=tuple(padded[5:12]),
        prox_ground_delta=tuple(padded[12:14]),
        acceleration=Vector3(padded[14] * g, padded[15] * g, padded[16] * g),
        temperature=padded[17] / 10,
        motor_left_speed=padded[18],
        motor_right_speed=padded[19],
    )
