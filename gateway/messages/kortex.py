"""Kinova Kortex messages: the wrist module `WristCyclicC61` (seed 003), and the Kortex 2 cyclic feedback.

The Kortex 2 types carry the vendor's field names and units (spec kortex.md §3.2-3.3); the arm's
published state and the gateway's cyclic-loop statistics follow them.
"""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import BOOL, F32, STR, U32, U64, Array, Float, Int, Nested, message, structure

#: Analog outputs: [0, 10] V in voltage mode, [0, 25] mA in current mode; the adapter knows the mode.
_ANALOG_OUT = Float(32, 0.0, 25.0)


@structure
class MessageId:
    """Kortex Common.MessageId: a 32-bit message identifier."""

    identifier: Annotated[int, U32] = 0


@message("kortex/WristCyclicC61/Command", kind="command")
class Command:
    """Wrist module command: digital outputs bitmask, analog outputs (V or mA), LED ring colour.

    `led_ring_rgb` is 0xRRGGBB; `led_ring_blink_frequency` in Hz, 0 for steady.
    """

    command_id: Annotated[MessageId, Nested(MessageId)] = MessageId()
    flags: Annotated[int, U32] = 0
    digital_outputs_state: Annotated[int, U32] = 0
    analog_output_a_channel_1_value: Annotated[float, _ANALOG_OUT] = 0.0
    analog_output_a_channel_2_value: Annotated[float, _ANALOG_OUT] = 0.0
    analog_output_b_channel_1_value: Annotated[float, _ANALOG_OUT] = 0.0
    analog_output_b_channel_2_value: Annotated[float, _ANALOG_OUT] = 0.0
    led_ring_rgb: Annotated[int, Int(32, False, maximum=0xFFFFFF)] = 0
    led_ring_blink_frequency: Annotated[int, U32] = 0


@message("kortex/WristCyclicC61/Feedback")
class Feedback:
    """Wrist module feedback: forces in N, torques in N·m, IMU in m/s² and deg/s, volts, °C."""

    feedback_id: Annotated[MessageId, Nested(MessageId)] = MessageId()
    status_flags: Annotated[int, U32] = 0
    buttons_state: Annotated[int, U32] = 0
    digital_inputs_state: Annotated[int, U32] = 0
    analog_input_a_channel_1_value: Annotated[float, F32] = 0.0
    analog_input_a_channel_2_value: Annotated[float, F32] = 0.0
    analog_input_b_channel_1_value: Annotated[float, F32] = 0.0
    analog_input_b_channel_2_value: Annotated[float, F32] = 0.0
    force_x: Annotated[float, F32] = 0.0
    force_y: Annotated[float, F32] = 0.0
    force_z: Annotated[float, F32] = 0.0
    torque_x: Annotated[float, F32] = 0.0
    torque_y: Annotated[float, F32] = 0.0
    torque_z: Annotated[float, F32] = 0.0
    imu_acceleration_x: Annotated[float, F32] = 0.0
    imu_acceleration_y: Annotated[float, F32] = 0.0
    imu_acceleration_z: Annotated[float, F32] = 0.0
    imu_angular_velocity_x: Annotated[float, F32] = 0.0
    imu_angular_velocity_y: Annotated[float, F32] = 0.0
    imu_angular_velocity_z: Annotated[float, F32] = 0.0
    voltage: Annotated[float, F32] = 0.0
    temperature_core: Annotated[float, F32] = 0.0
    fault_bank_a: Annotated[int, U32] = 0
    fault_bank_b: Annotated[int, U32] = 0


@message("kortex/WristCyclicC61/CustomData")
class CustomData:
    """Custom development data words; content varies with the module's debugging needs."""

    custom_data_id: Annotated[MessageId, Nested(MessageId)] = MessageId()
    custom_data_0: Annotated[int, U32] = 0
    custom_data_1: Annotated[int, U32] = 0
    custom_data_2: Annotated[int, U32] = 0
    custom_data_3: Annotated[int, U32] = 0
    custom_data_4: Annotated[int, U32] = 0
    custom_data_5: Annotated[int, U32] = 0
    custom_data_6: Annotated[int, U32] = 0
    custom_data_7: Annotated[int, U32] = 0
    custom_data_8: Annotated[int, U32] = 0
    custom_data_9: Annotated[int, U32] = 0
    custom_data_10: Annotated[int, U32] = 0
    custom_data_11: Annotated[int, U32] = 0
    custom_data_12: Annotated[int, U32] = 0
    custom_data_13: Annotated[int, U32] = 0
    custom_data_14: Annotated[int, U32] = 0
    custom_data_15: Annotated[int, U32] = 0


#: Most actuators any Kortex arm has (7 on Gen3); generous so a future arm is not refused.
MAX_ACTUATORS = 32


@structure
class ActuatorFeedback:
    """One actuator's cyclic feedback (Kortex 2 `BaseCyclic.ActuatorFeedback`; Kortex 3 sends the same fields).

    `position` in degrees [0, 360), `velocity` in deg/s, `torque` in N·m, `current_motor` in A,
    `voltage` in V, temperatures in °C, `jitter_comm` in µs; the banks are bitmasks.
    """

    command_id: Annotated[int, U32] = 0
    status_flags: Annotated[int, U32] = 0
    jitter_comm: Annotated[int, U32] = 0
    position: Annotated[float, F32] = 0.0
    velocity: Annotated[float, F32] = 0.0
    torque: Annotated[float, F32] = 0.0
    current_motor: Annotated[float, F32] = 0.0
    voltage: Annotated[float, F32] = 0.0
    temperature_motor: Annotated[float, F32] = 0.0
    temperature_core: Annotated[float, F32] = 0.0
    fault_bank_a: Annotated[int, U32] = 0
    fault_bank_b: Annotated[int, U32] = 0
    warning_bank_a: Annotated[int, U32] = 0
    warning_bank_b: Annotated[int, U32] = 0


@message("kortex/BaseCyclic/Actuators")
class Actuators:
    """Every actuator's feedback from one BaseCyclic cycle, joint 1 first.

    `frame_id` is the cycle's BaseCyclic frame id (16-bit sequence); each element is an
    `ActuatorFeedback`: position in degrees, velocity in deg/s, torque in N·m, current in A.
    """

    frame_id: Annotated[int, U32] = 0
    actuators: Annotated[tuple[ActuatorFeedback, ...], Array(Nested(ActuatorFeedback), max_length=MAX_ACTUATORS)] = ()


@message("kortex/InterconnectCyclic/Feedback")
class InterconnectFeedback:
    """The Kortex 2 interconnect (tool flange) feedback: its IMU, supply and faults.

    `imu_acceleration_*` in m/s², `imu_angular_velocity_*` in deg/s, `voltage` in V,
    `temperature_core` in °C, `jitter_comm` in µs; the banks are bitmasks. The gripper part is not carried.
    """

    feedback_id: Annotated[MessageId, Nested(MessageId)] = MessageId()
    status_flags: Annotated[int, U32] = 0
    jitter_comm: Annotated[int, U32] = 0
    imu_acceleration_x: Annotated[float, F32] = 0.0
    imu_acceleration_y: Annotated[float, F32] = 0.0
    imu_acceleration_z: Annotated[float, F32] = 0.0
    imu_angular_velocity_x: Annotated[float, F32] = 0.0
    imu_angular_velocity_y: Annotated[float, F32] = 0.0
    imu_angular_velocity_z: Annotated[float, F32] = 0.0
    voltage: Annotated[float, F32] = 0.0
    temperature_core: Annotated[float, F32] = 0.0
    fault_bank_a: Annotated[int, U32] = 0
    fault_bank_b: Annotated[int, U32] = 0
    warning_bank_a: Annotated[int, U32] = 0
    warning_bank_b: Annotated[int, U32] = 0


@structure
class Timestamp:
    """Kortex Common.Timestamp: `sec` seconds and `usec` microseconds since the Unix epoch."""

    sec: Annotated[int, U32] = 0
    usec: Annotated[int, Int(32, False, maximum=999_999)] = 0


@message("kortex/Base/ArmStateNotification")
class ArmStateNotification:
    """The arm's new state (Base.ArmStateTopic): `active_state` is one of the ARMSTATE_* constants.

    States 0-10 exist on both API versions; 11-17 only on Kortex 3 (Link 6), 255 only on Kortex 2.
    `timestamp` is when the arm changed state (Kortex 3 sends it inside the notification's generic_info).
    """

    ARMSTATE_UNSPECIFIED = 0
    ARMSTATE_BASE_INITIALIZATION = 1
    ARMSTATE_IDLE = 2
    ARMSTATE_INITIALIZATION = 3
    ARMSTATE_IN_FAULT = 4
    ARMSTATE_MAINTENANCE = 5
    ARMSTATE_SERVOING_LOW_LEVEL = 6
    ARMSTATE_SERVOING_READY = 7
    ARMSTATE_SERVOING_PLAYING_SEQUENCE = 8
    ARMSTATE_SERVOING_MANUALLY_CONTROLLED = 9
    ARMSTATE_BRAKE_RELEASING = 10
    ARMSTATE_POSITION_UNKNOWN = 11
    ARMSTATE_ARM_OPERATIONAL = 12
    ARMSTATE_RECOVERY = 13
    ARMSTATE_CONTROLLER_INITIALIZATION = 14
    ARMSTATE_WAIT_FOR_POSITION_CONFIRMATION = 15
    ARMSTATE_IN_FAULT_POWERED_OFF = 16
    ARMSTATE_IN_UNRECOVERABLE_FAULT = 17
    ARMSTATE_RESERVED = 255

    active_state: Annotated[int, U32] = 0
    timestamp: Annotated[Timestamp, Nested(Timestamp)] = Timestamp()


@message("kortex/BaseCyclic/BaseFeedback")
class BaseFeedback:
    """The base's part of a BaseCyclic feedback: arm state, supply, temperatures, faults, emergency stop.

    `active_state` is an `ArmStateNotification` ARMSTATE_* value, `arm_voltage` in V, `arm_current`
    in A, temperatures in °C; the banks are bitmasks. `is_emergency_stop_activated` is the arm's own
    emergency-stop state (Kortex 3 field 48; always false on Kortex 2, whose feedback has no such field).
    """

    active_state: Annotated[int, U32] = 0
    arm_voltage: Annotated[float, F32] = 0.0
    arm_current: Annotated[float, F32] = 0.0
    temperature_cpu: Annotated[float, F32] = 0.0
    temperature_ambient: Annotated[float, F32] = 0.0
    fault_bank_a: Annotated[int, U32] = 0
    fault_bank_b: Annotated[int, U32] = 0
    warning_bank_a: Annotated[int, U32] = 0
    warning_bank_b: Annotated[int, U32] = 0
    is_emergency_stop_activated: Annotated[bool, BOOL] = False


@message("hwgateway/KortexCyclicStats")
class KortexCyclicStats:
    """The gateway's BaseCyclic loop, published once a second.

    `api` is kortex2 or kortex3; `rate_hz` the requests sent per second over the last `window_s`
    seconds; `period_p50_ms` / `period_p99_ms` the send period's percentiles over that window. The
    counters run since the loop started: `cycles` requests sent, `replies` answered in time,
    `dropped` not answered within the reply timeout (a dropped cycle), `late` answers that came
    after it, `errors` error responses or undecodable replies, `skipped` cycles the loop skipped
    after falling more than its catch-up limit behind, `feedback_dropped` feedback samples the
    gateway had not taken from the cyclic process when newer ones came (the cycles went on; the
    bus got the newer samples).
    """

    api: Annotated[str, STR] = ""
    window_s: Annotated[float, F32] = 0.0
    rate_hz: Annotated[float, F32] = 0.0
    period_p50_ms: Annotated[float, F32] = 0.0
    period_p99_ms: Annotated[float, F32] = 0.0
    cycles: Annotated[int, U64] = 0
    replies: Annotated[int, U64] = 0
    dropped: Annotated[int, U64] = 0
    late: Annotated[int, U64] = 0
    errors: Annotated[int, U64] = 0
    skipped: Annotated[int, U64] = 0
    feedback_dropped: Annotated[int, U64] = 0
