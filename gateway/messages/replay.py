"""Commands of a replay device (`kind = "replay"`): seek, pause, resume and change speed; each answers its state."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import BOOL, STR, Float, message

_SECONDS = Float(64, 0.0)


@message("hwgateway/ReplayState")
class ReplayState:
    """What a replay does after a command: its state, position and speed, and what the command changed.

    `state`: playing, paused or finished; `position_s`: seconds from the recording's first message;
    `duration_s`: the recording's length in seconds; `speed`; `loop`; `applied`: the change in words.
    """

    state: Annotated[str, STR] = "playing"
    position_s: Annotated[float, _SECONDS] = 0.0
    duration_s: Annotated[float, _SECONDS] = 0.0
    speed: Annotated[float, Float(64, 0.001, 1000.0)] = 1.0
    loop: Annotated[bool, BOOL] = False
    applied: Annotated[str, STR] = ""


@message("hwgateway/ReplaySeek", kind="service", response=ReplayState)
class ReplaySeek:
    """Jump to `position_s` seconds from the recording's start (0 to its duration); playing or paused stays so."""

    position_s: Annotated[float, _SECONDS] = 0.0


@message("hwgateway/ReplayPause", kind="service", response=ReplayState)
class ReplayPause:
    """Hold the replay where it is (nothing is published until `hwgateway/ReplayResume`)."""


@message("hwgateway/ReplayResume", kind="service", response=ReplayState)
class ReplayResume:
    """Play on from where the replay was paused (or from the start when it had finished)."""


@message("hwgateway/ReplaySpeed", kind="service", response=ReplayState)
class ReplaySpeed:
    """Play at `speed` times the recorded pace from now on (0.001 to 1000)."""

    speed: Annotated[float, Float(64, 0.001, 1000.0)] = 1.0
