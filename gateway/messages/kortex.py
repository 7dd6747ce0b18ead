"""Kinova Kortex wrist module messages `WristCyclicC61` (seed 003)."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import F32, U32, Float, Int, Nested, message, structure

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
