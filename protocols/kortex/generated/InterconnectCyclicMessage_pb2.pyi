from . import GripperCyclicMessage_pb2 as _GripperCyclicMessage_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MessageId(_message.Message):
    __slots__ = ("identifier",)
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    identifier: int
    def __init__(self, identifier: _Optional[int] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("command_id", "flags", "gripper_command")
    COMMAND_ID_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    GRIPPER_COMMAND_FIELD_NUMBER: _ClassVar[int]
    command_id: MessageId
    flags: int
    gripper_command: _GripperCyclicMessage_pb2.Command
    def __init__(self, command_id: _Optional[_Union[MessageId, _Mapping]] = ..., flags: _Optional[int] = ..., gripper_command: _Optional[_Union[_GripperCyclicMessage_pb2.Command, _Mapping]] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("feedback_id", "status_flags", "jitter_comm", "imu_acceleration_x", "imu_acceleration_y", "imu_acceleration_z", "imu_angular_velocity_x", "imu_angular_velocity_y", "imu_angular_velocity_z", "voltage", "temperature_core", "fault_bank_a", "fault_bank_b", "warning_bank_a", "warning_bank_b", "gripper_feedback")
    FEEDBACK_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FLAGS_FIELD_NUMBER: _ClassVar[int]
    JITTER_COMM_FIELD_NUMBER: _ClassVar[int]
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
    WARNING_BANK_A_FIELD_NUMBER: _ClassVar[int]
    WARNING_BANK_B_FIELD_NUMBER: _ClassVar[int]
    GRIPPER_FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    feedback_id: MessageId
    status_flags: int
    jitter_comm: int
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
    warning_bank_a: int
    warning_bank_b: int
    gripper_feedback: _GripperCyclicMessage_pb2.Feedback
    def __init__(self, feedback_id: _Optional[_Union[MessageId, _Mapping]] = ..., status_flags: _Optional[int] = ..., jitter_comm: _Optional[int] = ..., imu_acceleration_x: _Optional[float] = ..., imu_acceleration_y: _Optional[float] = ..., imu_acceleration_z: _Optional[float] = ..., imu_angular_velocity_x: _Optional[float] = ..., imu_angular_velocity_y: _Optional[float] = ..., imu_angular_velocity_z: _Optional[float] = ..., voltage: _Optional[float] = ..., temperature_core: _Optional[float] = ..., fault_bank_a: _Optional[int] = ..., fault_bank_b: _Optional[int] = ..., warning_bank_a: _Optional[int] = ..., warning_bank_b: _Optional[int] = ..., gripper_feedback: _Optional[_Union[_GripperCyclicMessage_pb2.Feedback, _Mapping]] = ...) -> None: ...

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
    custom_data_id: MessageId
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
    def __init__(self, custom_data_id: _Optional[_Union[MessageId, _Mapping]] = ..., custom_data_0: _Optional[int] = ..., custom_data_1: _Optional[int] = ..., custom_data_2: _Optional[int] = ..., custom_data_3: _Optional[int] = ..., custom_data_4: _Optional[int] = ..., custom_data_5: _Optional[int] = ..., custom_data_6: _Optional[int] = ..., custom_data_7: _Optional[int] = ..., custom_data_8: _Optional[int] = ..., custom_data_9: _Optional[int] = ..., custom_data_10: _Optional[int] = ..., custom_data_11: _Optional[int] = ..., custom_data_12: _Optional[int] = ..., custom_data_13: _Optional[int] = ..., custom_data_14: _Optional[int] = ..., custom_data_15: _Optional[int] = ...) -> None: ...
