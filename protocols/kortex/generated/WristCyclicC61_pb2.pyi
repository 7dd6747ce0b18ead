from . import WristCyclicCommon_pb2 as _WristCyclicCommon_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WristButtonMask(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WRIST_BUTTON_UNSPECIFIED: _ClassVar[WristButtonMask]
    HAND_GUIDING: _ClassVar[WristButtonMask]
    BUTTON_1: _ClassVar[WristButtonMask]
    BUTTON_2: _ClassVar[WristButtonMask]
    BUTTON_3: _ClassVar[WristButtonMask]
    BUTTON_4: _ClassVar[WristButtonMask]

class WristDigitalIOMask(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WRIST_DIGITAL_IO_UNSPECIFIED: _ClassVar[WristDigitalIOMask]
    A_1: _ClassVar[WristDigitalIOMask]
    A_2: _ClassVar[WristDigitalIOMask]
    A_3: _ClassVar[WristDigitalIOMask]
    A_4: _ClassVar[WristDigitalIOMask]
    B_1: _ClassVar[WristDigitalIOMask]
    B_2: _ClassVar[WristDigitalIOMask]
    B_3: _ClassVar[WristDigitalIOMask]
    B_4: _ClassVar[WristDigitalIOMask]
WRIST_BUTTON_UNSPECIFIED: WristButtonMask
HAND_GUIDING: WristButtonMask
BUTTON_1: WristButtonMask
BUTTON_2: WristButtonMask
BUTTON_3: WristButtonMask
BUTTON_4: WristButtonMask
WRIST_DIGITAL_IO_UNSPECIFIED: WristDigitalIOMask
A_1: WristDigitalIOMask
A_2: WristDigitalIOMask
A_3: WristDigitalIOMask
A_4: WristDigitalIOMask
B_1: WristDigitalIOMask
B_2: WristDigitalIOMask
B_3: WristDigitalIOMask
B_4: WristDigitalIOMask

class Command(_message.Message):
    __slots__ = ("command_id", "flags", "digital_outputs_state", "analog_output_a_channel_1_value", "analog_output_a_channel_2_value", "analog_output_b_channel_1_value", "analog_output_b_channel_2_value", "led_ring_rgb", "led_ring_blink_frequency")
    COMMAND_ID_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    DIGITAL_OUTPUTS_STATE_FIELD_NUMBER: _ClassVar[int]
    ANALOG_OUTPUT_A_CHANNEL_1_VALUE_FIELD_NUMBER: _ClassVar[int]
    ANALOG_OUTPUT_A_CHANNEL_2_VALUE_FIELD_NUMBER: _ClassVar[int]
    ANALOG_OUTPUT_B_CHANNEL_1_VALUE_FIELD_NUMBER: _ClassVar[int]
    ANALOG_OUTPUT_B_CHANNEL_2_VALUE_FIELD_NUMBER: _ClassVar[int]
    LED_RING_RGB_FIELD_NUMBER: _ClassVar[int]
    LED_RING_BLINK_FREQUENCY_FIELD_NUMBER: _ClassVar[int]
    command_id: _WristCyclicCommon_pb2.MessageId
    flags: int
    digital_outputs_state: int
    analog_output_a_channel_1_value: float
    analog_output_a_channel_2_value: float
    analog_output_b_channel_1_value: float
    analog_output_b_channel_2_value: float
    led_ring_rgb: int
    led_ring_blink_frequency: int
    def __init__(self, command_id: _Optional[_Union[_WristCyclicCommon_pb2.MessageId, _Mapping]] = ..., flags: _Optional[int] = ..., digital_outputs_state: _Optional[int] = ..., analog_output_a_channel_1_value: _Optional[float] = ..., analog_output_a_channel_2_value: _Optional[float] = ..., analog_output_b_channel_1_value: _Optional[float] = ..., analog_output_b_channel_2_value: _Optional[float] = ..., led_ring_rgb: _Optional[int] = ..., led_ring_blink_frequency: _Optional[int] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("feedback_id", "status_flags", "buttons_state", "digital_inputs_state", "analog_input_a_channel_1_value", "analog_input_a_channel_2_value", "analog_input_b_channel_1_value", "analog_input_b_channel_2_value", "force_x", "force_y", "force_z", "torque_x", "torque_y", "torque_z", "imu_acceleration_x", "imu_acceleration_y", "imu_acceleration_z", "imu_angular_velocity_x", "imu_angular_velocity_y", "imu_angular_velocity_z", "voltage", "temperature_core", "fault_bank_a", "fault_bank_b")
    FEEDBACK_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FLAGS_FIELD_NUMBER: _ClassVar[int]
    BUTTONS_STATE_FIELD_NUMBER: _ClassVar[int]
    DIGITAL_INPUTS_STATE_FIELD_NUMBER: _ClassVar[int]
    ANALOG_INPUT_A_CHANNEL_1_VALUE_FIELD_NUMBER: _ClassVar[int]
    ANALOG_INPUT_A_CHANNEL_2_VALUE_FIELD_NUMBER: _ClassVar[int]
    ANALOG_INPUT_B_CHANNEL_1_VALUE_FIELD_NUMBER: _ClassVar[int]
    ANALOG_INPUT_B_CHANNEL_2_VALUE_FIELD_NUMBER: _ClassVar[int]
    FORCE_X_FIELD_NUMBER: _ClassVar[int]
    FORCE_Y_FIELD_NUMBER: _ClassVar[int]
    FORCE_Z_FIELD_NUMBER: _ClassVar[int]
    TORQUE_X_FIELD_NUMBER: _ClassVar[int]
    TORQUE_Y_FIELD_NUMBER: _ClassVar[int]
    TORQUE_Z_FIELD_NUMBER: _ClassVar[int]
    IMU_ACCELERATION_X_FIELD_NUMBER: _ClassVar[int]
    IMU_ACCELERATION_Y_FIELD_NUMBER: _ClassVar[int]
    IMU_ACCELERATION_Z_FIELD_NUMBER: _ClassVar[int]
    IMU_ANGULAR_VELOCITY_X_FIELD_NUMBER: _ClassVar[int]
    IMU_ANGULAR_VELOCITY_Y_FIELD_NUMBER: _ClassVar[int]
    IMU_ANGULAR_VELOCITY_Z_FIELD_NUMBER: _ClassVar[int]
    VOLTAGE_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_CORE_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_A_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_B_FIELD_NUMBER: _ClassVar[int]
    feedback_id: _WristCyclicCommon_pb2.MessageId
    status_flags: int
    buttons_state: int
    digital_inputs_state: int
    analog_input_a_channel_1_value: float
    analog_input_a_channel_2_value: float
    analog_input_b_channel_1_value: float
    analog_input_b_channel_2_value: float
    force_x: float
    force_y: float
    force_z: float
    torque_x: float
    torque_y: float
    torque_z: float
    imu_acceleration_x: float
    imu_acceleration_y: float
    imu_acceleration_z: float
    imu_angular_velocity_x: float
    imu_angular_velocity_y: float
    imu_angular_velocity_z: float
    voltage: float
    temperature_core: float
    fault_bank_a: int
    fault_bank_b: int
    def __init__(self, feedback_id: _Optional[_Union[_WristCyclicCommon_pb2.MessageId, _Mapping]] = ..., status_flags: _Optional[int] = ..., buttons_state: _Optional[int] = ..., digital_inputs_state: _Optional[int] = ..., analog_input_a_channel_1_value: _Optional[float] = ..., analog_input_a_channel_2_value: _Optional[float] = ..., analog_input_b_channel_1_value: _Optional[float] = ..., analog_input_b_channel_2_value: _Optional[float] = ..., force_x: _Optional[float] = ..., force_y: _Optional[float] = ..., force_z: _Optional[float] = ..., torque_x: _Optional[float] = ..., torque_y: _Optional[float] = ..., torque_z: _Optional[float] = ..., imu_acceleration_x: _Optional[float] = ..., imu_acceleration_y: _Optional[float] = ..., imu_acceleration_z: _Optional[float] = ..., imu_angular_velocity_x: _Optional[float] = ..., imu_angular_velocity_y: _Optional[float] = ..., imu_angular_velocity_z: _Optional[float] = ..., voltage: _Optional[float] = ..., temperature_core: _Optional[float] = ..., fault_bank_a: _Optional[int] = ..., fault_bank_b: _Optional[int] = ...) -> None: ...

class CustomData(_message.Message):
    __slots__ = ("custom_data_id", "custom_data_0", "custom_data_1", "custom_data_2", "custom_data_3", "custom_data_4", "custom_data_5", "custom_data_6", "custom_data_7", "custom_data_8", "custom_data_9", "custom_data_10", "custom_data_11", "custom_data_12", "custom_data_13", "custom_data_14", "custom_data_15")
    CUSTOM_DATA_ID_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_0_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_1_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_2_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_3_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_4_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_5_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_6_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_7_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_8_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_9_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_10_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_11_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_12_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_13_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_14_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_15_FIELD_NUMBER: _ClassVar[int]
    custom_data_id: _WristCyclicCommon_pb2.MessageId
    custom_data_0: int
    custom_data_1: int
    custom_data_2: int
    custom_data_3: int
    custom_data_4: int
    custom_data_5: int
    custom_data_6: int
    custom_data_7: int
    custom_data_8: int
    custom_data_9: int
    custom_data_10: int
    custom_data_11: int
    custom_data_12: int
    custom_data_13: int
    custom_data_14: int
    custom_data_15: int
    def __init__(self, custom_data_id: _Optional[_Union[_WristCyclicCommon_pb2.MessageId, _Mapping]] = ..., custom_data_0: _Optional[int] = ..., custom_data_1: _Optional[int] = ..., custom_data_2: _Optional[int] = ..., custom_data_3: _Optional[int] = ..., custom_data_4: _Optional[int] = ..., custom_data_5: _Optional[int] = ..., custom_data_6: _Optional[int] = ..., custom_data_7: _Optional[int] = ..., custom_data_8: _Optional[int] = ..., custom_data_9: _Optional[int] = ..., custom_data_10: _Optional[int] = ..., custom_data_11: _Optional[int] = ..., custom_data_12: _Optional[int] = ..., custom_data_13: _Optional[int] = ..., custom_data_14: _Optional[int] = ..., custom_data_15: _Optional[int] = ...) -> None: ...
