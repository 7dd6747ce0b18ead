"""hwgateway's own Aseba/Thymio types, for what the asebaros and thymio_msgs seeds have no message for."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.common import Time, Vector3
from gateway.messages.schema import BOOL, F64, I16, STR, U16, U32, Array, Int, Nested, Str, message, structure

_MOTOR_TARGET = Int(16, minimum=-500, maximum=500)


@message("hwgateway/ThymioState")
class ThymioState:
    """A Thymio II's sensors and motors, sampled together by the gateway's program on the robot.

    `buttons`: backward, left, center, forward, right (true while pressed). `prox_horizontal`: the 7
    front and back proximity sensors, raw (0 = nothing, about 4000 = touching). `prox_ground_delta`:
    the 2 ground sensors, raw reflected light. `acceleration` in m/s² (the robot measures ±2 g in
    steps of 1/23 g). `temperature` in °C. `motor_left_speed` / `motor_right_speed`: measured wheel
    speeds in Thymio units (500 ≈ 20 cm/s).
    """

    stamp: Annotated[Time, Nested(Time)] = Time()
    buttons: Annotated[tuple[bool, ...], Array(BOOL, 5)] = (False,) * 5
    prox_horizontal: Annotated[tuple[int, ...], Array(I16, 7)] = (0,) * 7
    prox_ground_delta: Annotated[tuple[int, ...], Array(I16, 2)] = (0, 0)
    acceleration: Annotated[Vector3, Nested(Vector3)] = Vector3()
    temperature: Annotated[float, F64] = 0.0
    motor_left_speed: Annotated[int, I16] = 0
    motor_right_speed: Annotated[int, I16] = 0


@message("hwgateway/ThymioMotors", kind="command")
class ThymioMotors:
    """Wheel speed targets in Thymio units, -500..500 (500 ≈ 20 cm/s).

    Non-zero targets hold a lease for the commanding client: the motors stop when it disconnects, on
    estop, or when no new target arrives within the device's `motor_lease_ms`.
    """

    left: Annotated[int, _MOTOR_TARGET] = 0
    right: Annotated[int, _MOTOR_TARGET] = 0


@message("hwgateway/AsebaEvent", kind="command")
class AsebaEvent:
    """Send the user event `name` of the program running on the node, with its `data` words."""

    name: Annotated[str, STR] = ""
    data: Annotated[tuple[int, ...], Array(I16, max_length=258)] = ()


# -- programming a node from source (the Thymio Device Manager face uses these) ---------------


@structure
class AsebaEventSpec:
    """A global event a program may `emit` or handle: its `name` and `size` in 16-bit words."""

    name: Annotated[str, STR] = ""
    size: Annotated[int, U16] = 0


@structure
class AsebaVariableValue:
    """A named variable and its words."""

    name: Annotated[str, STR] = ""
    data: Annotated[tuple[int, ...], Array(I16, max_length=65536)] = ()


@structure
class AsebaNativeParameter:
    """A native function's parameter: `size` > 0 fixed words, < 0 a template id, 0 any size."""

    name: Annotated[str, STR] = ""
    size: Annotated[int, Int(16)] = 0


@structure
class AsebaNative:
    """A native function of the node."""

    name: Annotated[str, STR] = ""
    description: Annotated[str, STR] = ""
    parameters: Annotated[tuple[AsebaNativeParameter, ...], Array(Nested(AsebaNativeParameter))] = ()


@structure
class AsebaLocalEvent:
    """A local event of the node (the i-th has id 0xFFFE - i)."""

    name: Annotated[str, STR] = ""
    description: Annotated[str, STR] = ""


@structure
class AsebaNamedVariable:
    """A named variable of the node's firmware, `size` in words."""

    name: Annotated[str, STR] = ""
    size: Annotated[int, U16] = 0


@message("hwgateway/AsebaVMDescription_Response")
class AsebaVMDescriptionResponse:
    """The node's whole VM description as the node sent it (sizes in 16-bit words)."""

    name: Annotated[str, STR] = ""
    bytecode_size: Annotated[int, U32] = 0
    stack_size: Annotated[int, U32] = 0
    variables_size: Annotated[int, U32] = 0
    variables: Annotated[tuple[AsebaNamedVariable, ...], Array(Nested(AsebaNamedVariable))] = ()
    local_events: Annotated[tuple[AsebaLocalEvent, ...], Array(Nested(AsebaLocalEvent))] = ()
    natives: Annotated[tuple[AsebaNative, ...], Array(Nested(AsebaNative))] = ()


@message("hwgateway/AsebaVMDescription", kind="service", response=AsebaVMDescriptionResponse, read_only=True)
class AsebaVMDescription:
    """Service: the node's VM description (sizes, named variables, local events, natives)."""


@message("hwgateway/AsebaCompile_Response")
class AsebaCompileResponse:
    """The outcome: `ok`, else the first error's `message`, `line` and `column` (from 1).

    On success `bytecode_size` and `variables_size` are the program's words; the totals are the node's.
    """

    ok: Annotated[bool, BOOL] = False
    message: Annotated[str, STR] = ""
    line: Annotated[int, U32] = 0
    column: Annotated[int, U32] = 0
    bytecode_size: Annotated[int, U32] = 0
    total_bytecode_size: Annotated[int, U32] = 0
    variables_size: Annotated[int, U32] = 0
    total_variables_size: Annotated[int, U32] = 0


@message("hwgateway/AsebaCompile", kind="service", response=AsebaCompileResponse)
class AsebaCompile:
    """Service: compile Aseba `source` against the node's live description and `events`.

    With `load` the bytecode goes to the node, stopped at the start of its init code (run it with
    hwgateway/AsebaVMControl `run`); it replaces the gateway's Thymio program or a loaded script, and
    its events and variables become the node's (by name, as for LoadScript). A program that does not
    compile is an `ok: false` answer, not an error.
    """

    source: Annotated[str, Str(max_length=65536)] = ""
    events: Annotated[tuple[AsebaEventSpec, ...], Array(Nested(AsebaEventSpec), max_length=256)] = ()
    load: Annotated[bool, BOOL] = True


@message("hwgateway/AsebaVMControl", kind="command")
class AsebaVMControl:
    """Control the node's VM: `run`, `stop` (also sets both motor targets to 0), `pause`, `step`, `reset`."""

    command: Annotated[str, STR] = "run"


@message("hwgateway/AsebaVariables_Response")
class AsebaVariablesResponse:
    """Every named variable of the node, the firmware's first, then the loaded program's."""

    variables: Annotated[tuple[AsebaVariableValue, ...], Array(Nested(AsebaVariableValue))] = ()


@message("hwgateway/AsebaVariables", kind="service", response=AsebaVariablesResponse, read_only=True)
class AsebaVariables:
    """Service: read every named variable of the node in one go."""
