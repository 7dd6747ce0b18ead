"""A binding's status on the bus (`<binding>/status`) and its pause and resume services."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import BOOL, F64, I32, STR, Array, Str, message

_NAMES = Array(Str(max_length=128), max_length=64)


@message("hwgateway/BindingStatus")
class BindingStatus:
    """What a binding does now (`<binding>/status`, on every change and a few times a second).

    `state`: `active` (driving its target from the source), `idle` (not driving: `reason` says why,
    the safe output confirmed), `safing` (re-sending the safe output until the device confirms it),
    `yielded` (a source of higher priority drives the target), `paused` (from the API),
    `stopped` (by STOP ALL, until resumed). `reason`: why it is not driving ("" when active).
    `deadman_held`: the deadman input is held (true with `deadman = "none"`). `input_age_s`: age of
    the newest source sample in seconds (-1: none yet). `clamped`: an output was limited (range,
    saturation or slew) on the last tick. `source`: the device the newest sample came from.
    `target`, `command`, `fields`, `values`: the last output sent (the command's numeric fields), the
    safe output once the binding stops driving (STOP ALL sends none: the last driven one stays).
    `priority`: the binding's arbitration priority. `outputs_sent`, `safe_outputs_sent`: counts.
    """

    state: Annotated[str, STR] = "idle"
    reason: Annotated[str, STR] = ""
    paused: Annotated[bool, BOOL] = False
    deadman_held: Annotated[bool, BOOL] = False
    input_age_s: Annotated[float, F64] = -1.0
    clamped: Annotated[bool, BOOL] = False
    source: Annotated[str, STR] = ""
    target: Annotated[str, STR] = ""
    command: Annotated[str, STR] = ""
    fields: Annotated[tuple[str, ...], _NAMES] = ()
    values: Annotated[tuple[float, ...], Array(F64, max_length=64)] = ()
    priority: Annotated[int, I32] = 0
    outputs_sent: Annotated[int, I32] = 0
    safe_outputs_sent: Annotated[int, I32] = 0


@message("hwgateway/BindingPause", kind="service", response=BindingStatus)
class BindingPause:
    """Pause the binding: it sends its safe output (re-sent until confirmed) and drives nothing until resumed."""


@message("hwgateway/BindingResume", kind="service", response=BindingStatus)
class BindingResume:
    """Resume a binding paused from the API or stopped by STOP ALL (the deadman must then be pressed anew)."""
