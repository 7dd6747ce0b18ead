from . import Common_pb2 as _Common_pb2
from . import InterconnectCyclicMessage_pb2 as _InterconnectCyclicMessage_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ActuatorCommand(_message.Message):
    __slots__ = ("command_id", "flags", "position", "velocity", "torque_joint", "current_motor")
    COMMAND_ID_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    VELOCITY_FIELD_NUMBER: _ClassVar[int]
    TORQUE_JOINT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_MOTOR_FIELD_NUMBER: _ClassVar[int]
    command_id: int
    flags: int
    position: float
    velocity: float
    torque_joint: float
    current_motor: float
    def __init__(self, command_id: _Optional[int] = ..., flags: _Optional[int] = ..., position: _Optional[float] = ..., velocity: _Optional[float] = ..., torque_joint: _Optional[float] = ..., current_motor: _Optional[float] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("frame_id", "actuators", "interconnect")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    ACTUATORS_FIELD_NUMBER: _ClassVar[int]
    INTERCONNECT_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    actuators: _containers.RepeatedCompositeFieldContainer[ActuatorCommand]
    interconnect: _InterconnectCyclicMessage_pb2.Command
    def __init__(self, frame_id: _Optional[int] = ..., actuators: _Optional[_Iterable[_Union[ActuatorCommand, _Mapping]]] = ..., interconnect: _Optional[_Union[_InterconnectCyclicMessage_pb2.Command, _Mapping]] = ...) -> None: ...

class ActuatorFeedback(_message.Message):
    __slots__ = ("command_id", "status_flags", "jitter_comm", "position", "velocity", "torque", "current_motor", "voltage", "temperature_motor", "temperature_core", "fault_bank_a", "fault_bank_b", "warning_bank_a", "warning_bank_b")
    COMMAND_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FLAGS_FIELD_NUMBER: _ClassVar[int]
    JITTER_COMM_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    VELOCITY_FIELD_NUMBER: _ClassVar[int]
    TORQUE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_MOTOR_FIELD_NUMBER: _ClassVar[int]
    VOLTAGE_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_MOTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_CORE_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_A_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_B_FIELD_NUMBER: _ClassVar[int]
    WARNING_BANK_A_FIELD_NUMBER: _ClassVar[int]
    WARNING_BANK_B_FIELD_NUMBER: _ClassVar[int]
    command_id: int
    status_flags: int
    jitter_comm: int
    position: float
    velocity: float
    torque: float
    current_motor: float
    voltage: float
    temperature_motor: float
    temperature_core: float
    fault_bank_a: int
    fault_bank_b: int
    warning_bank_a: int
    warning_bank_b: int
    def __init__(self, command_id: _Optional[int] = ..., status_flags: _Optional[int] = ..., jitter_comm: _Optional[int] = ..., position: _Optional[float] = ..., velocity: _Optional[float] = ..., torque: _Optional[float] = ..., current_motor: _Optional[float] = ..., voltage: _Optional[float] = ..., temperature_motor: _Optional[float] = ..., temperature_core: _Optional[float] = ..., fault_bank_a: _Optional[int] = ..., fault_bank_b: _Optional[int] = ..., warning_bank_a: _Optional[int] = ..., warning_bank_b: _Optional[int] = ...) -> None: ...

class BaseFeedback(_message.Message):
    __slots__ = ("active_state_connection_identifier", "active_state", "arm_voltage", "arm_current", "temperature_cpu", "temperature_ambient", "imu_acceleration_x", "imu_acceleration_y", "imu_acceleration_z", "imu_angular_velocity_x", "imu_angular_velocity_y", "imu_angular_velocity_z", "tool_pose_x", "tool_pose_y", "tool_pose_z", "tool_pose_theta_x", "tool_pose_theta_y", "tool_pose_theta_z", "tool_twist_linear_x", "tool_twist_linear_y", "tool_twist_linear_z", "tool_twist_angular_x", "tool_twist_angular_y", "tool_twist_angular_z", "tool_external_wrench_force_x", "tool_external_wrench_force_y", "tool_external_wrench_force_z", "tool_external_wrench_torque_x", "tool_external_wrench_torque_y", "tool_external_wrench_torque_z", "fault_bank_a", "fault_bank_b", "warning_bank_a", "warning_bank_b", "commanded_tool_pose_x", "commanded_tool_pose_y", "commanded_tool_pose_z", "commanded_tool_pose_theta_x", "commanded_tool_pose_theta_y", "commanded_tool_pose_theta_z")
    ACTIVE_STATE_CONNECTION_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_STATE_FIELD_NUMBER: _ClassVar[int]
    ARM_VOLTAGE_FIELD_NUMBER: _ClassVar[int]
    ARM_CURRENT_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_CPU_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_AMBIENT_FIELD_NUMBER: _ClassVar[int]
    IMU_ACCELERATION_X_FIELD_NUMBER: _ClassVar[int]
    IMU_ACCELERATION_Y_FIELD_NUMBER: _ClassVar[int]
    IMU_ACCELERATION_Z_FIELD_NUMBER: _ClassVar[int]
    IMU_ANGULAR_VELOCITY_X_FIELD_NUMBER: _ClassVar[int]
    IMU_ANGULAR_VELOCITY_Y_FIELD_NUMBER: _ClassVar[int]
    IMU_ANGULAR_VELOCITY_Z_FIELD_NUMBER: _ClassVar[int]
    TOOL_POSE_X_FIELD_NUMBER: _ClassVar[int]
    TOOL_POSE_Y_FIELD_NUMBER: _ClassVar[int]
    TOOL_POSE_Z_FIELD_NUMBER: _ClassVar[int]
    TOOL_POSE_THETA_X_FIELD_NUMBER: _ClassVar[int]
    TOOL_POSE_THETA_Y_FIELD_NUMBER: _ClassVar[int]
    TOOL_POSE_THETA_Z_FIELD_NUMBER: _ClassVar[int]
    TOOL_TWIST_LINEAR_X_FIELD_NUMBER: _ClassVar[int]
    TOOL_TWIST_LINEAR_Y_FIELD_NUMBER: _ClassVar[int]
    TOOL_TWIST_LINEAR_Z_FIELD_NUMBER: _ClassVar[int]
    TOOL_TWIST_ANGULAR_X_FIELD_NUMBER: _ClassVar[int]
    TOOL_TWIST_ANGULAR_Y_FIELD_NUMBER: _ClassVar[int]
    TOOL_TWIST_ANGULAR_Z_FIELD_NUMBER: _ClassVar[int]
    TOOL_EXTERNAL_WRENCH_FORCE_X_FIELD_NUMBER: _ClassVar[int]
    TOOL_EXTERNAL_WRENCH_FORCE_Y_FIELD_NUMBER: _ClassVar[int]
    TOOL_EXTERNAL_WRENCH_FORCE_Z_FIELD_NUMBER: _ClassVar[int]
    TOOL_EXTERNAL_WRENCH_TORQUE_X_FIELD_NUMBER: _ClassVar[int]
    TOOL_EXTERNAL_WRENCH_TORQUE_Y_FIELD_NUMBER: _ClassVar[int]
    TOOL_EXTERNAL_WRENCH_TORQUE_Z_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_A_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_B_FIELD_NUMBER: _ClassVar[int]
    WARNING_BANK_A_FIELD_NUMBER: _ClassVar[int]
    WARNING_BANK_B_FIELD_NUMBER: _ClassVar[int]
    COMMANDED_TOOL_POSE_X_FIELD_NUMBER: _ClassVar[int]
    COMMANDED_TOOL_POSE_Y_FIELD_NUMBER: _ClassVar[int]
    COMMANDED_TOOL_POSE_Z_FIELD_NUMBER: _ClassVar[int]
    COMMANDED_TOOL_POSE_THETA_X_FIELD_NUMBER: _ClassVar[int]
    COMMANDED_TOOL_POSE_THETA_Y_FIELD_NUMBER: _ClassVar[int]
    COMMANDED_TOOL_POSE_THETA_Z_FIELD_NUMBER: _ClassVar[int]
    active_state_connection_identifier: int
    active_state: _Common_pb2.ArmState
    arm_voltage: float
    arm_current: float
    temperature_cpu: float
    temperature_ambient: float
    imu_acceleration_x: float
    imu_acceleration_y: float
    imu_acceleration_z: float
    imu_angular_velocity_x: float
    imu_angular_velocity_y: float
    imu_angular_velocity_z: float
    tool_pose_x: float
    tool_pose_y: float
    tool_pose_z: float
    tool_pose_theta_x: float
    tool_pose_theta_y: float
    tool_pose_theta_z: float
    tool_twist_linear_x: float
    tool_twist_linear_y: float
    tool_twist_linear_z: float
    tool_twist_angular_x: float
    tool_twist_angular_y: float
    tool_twist_angular_z: float
    tool_external_wrench_force_x: float
    tool_external_wrench_force_y: float
    tool_external_wrench_force_z: float
    tool_external_wrench_torque_x: float
    tool_external_wrench_torque_y: float
    tool_external_wrench_torque_z: float
    fault_bank_a: int
    fault_bank_b: int
    warning_bank_a: int
    warning_bank_b: int
    commanded_tool_pose_x: float
    commanded_tool_pose_y: float
    commanded_tool_pose_z: float
    commanded_tool_pose_theta_x: float
    commanded_tool_pose_theta_y: float
    commanded_tool_pose_theta_z: float
    def __init__(self, active_state_connection_identifier: _Optional[int] = ..., active_state: _Optional[_Union[_Common_pb2.ArmState, str]] = ..., arm_voltage: _Optional[float] = ..., arm_current: _Optional[float] = ..., temperature_cpu: _Optional[float] = ..., temperature_ambient: _Optional[float] = ..., imu_acceleration_x: _Optional[float] = ..., imu_acceleration_y: _Optional[float] = ..., imu_acceleration_z: _Optional[float] = ..., imu_angular_velocity_x: _Optional[float] = ..., imu_angular_velocity_y: _Optional[float] = ..., imu_angular_velocity_z: _Optional[float] = ..., tool_pose_x: _Optional[float] = ..., tool_pose_y: _Optional[float] = ..., tool_pose_z: _Optional[float] = ..., tool_pose_theta_x: _Optional[float] = ..., tool_pose_theta_y: _Optional[float] = ..., tool_pose_theta_z: _Optional[float] = ..., tool_twist_linear_x: _Optional[float] = ..., tool_twist_linear_y: _Optional[float] = ..., tool_twist_linear_z: _Optional[float] = ..., tool_twist_angular_x: _Optional[float] = ..., tool_twist_angular_y: _Optional[float] = ..., tool_twist_angular_z: _Optional[float] = ..., tool_external_wrench_force_x: _Optional[float] = ..., tool_external_wrench_force_y: _Optional[float] = ..., tool_external_wrench_force_z: _Optional[float] = ..., tool_external_wrench_torque_x: _Optional[float] = ..., tool_external_wrench_torque_y: _Optional[float] = ..., tool_external_wrench_torque_z: _Optional[float] = ..., fault_bank_a: _Optional[int] = ..., fault_bank_b: _Optional[int] = ..., warning_bank_a: _Optional[int] = ..., warning_bank_b: _Optional[int] = ..., commanded_tool_pose_x: _Optional[float] = ..., commanded_tool_pose_y: _Optional[float] = ..., commanded_tool_pose_z: _Optional[float] = ..., commanded_tool_pose_theta_x: _Optional[float] = ..., commanded_tool_pose_theta_y: _Optional[float] = ..., commanded_tool_pose_theta_z: _Optional[float] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("frame_id", "base", "actuators", "interconnect")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    ACTUATORS_FIELD_NUMBER: _ClassVar[int]
    INTERCONNECT_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    base: BaseFeedback
    actuators: _containers.RepeatedCompositeFieldContainer[ActuatorFeedback]
    interconnect: _InterconnectCyclicMessage_pb2.Feedback
    def __init__(self, frame_id: _Optional[int] = ..., base: _Optional[_Union[BaseFeedback, _Mapping]] = ..., actuators: _Optional[_Iterable[_Union[ActuatorFeedback, _Mapping]]] = ..., interconnect: _Optional[_Union[_InterconnectCyclicMessage_pb2.Feedback, _Mapping]] = ...) -> None: ...

class CustomData(_message.Message):
    __slots__ = ("frame_id", "custom_data_0", "custom_data_1", "custom_data_2", "custom_data_3", "custom_data_4", "custom_data_5", "custom_data_6", "custom_data_7", "interconnect_custom_data")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_0_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_1_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_2_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_3_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_4_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_5_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_6_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_DATA_7_FIELD_NUMBER: _ClassVar[int]
    INTERCONNECT_CUSTOM_DATA_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    custom_data_0: int
    custom_data_1: int
    custom_data_2: int
    custom_data_3: int
    custom_data_4: int
    custom_data_5: int
    custom_data_6: int
    custom_data_7: int
    interconnect_custom_data: _InterconnectCyclicMessage_pb2.CustomData
    def __init__(self, frame_id: _Optional[int] = ..., custom_data_0: _Optional[int] = ..., custom_data_1: _Optional[int] = ..., custom_data_2: _Optional[int] = ..., custom_data_3: _Optional[int] = ..., custom_data_4: _Optional[int] = ..., custom_data_5: _Optional[int] = ..., custom_data_6: _Optional[int] = ..., custom_data_7: _Optional[int] = ..., interconnect_custom_data: _Optional[_Union[_InterconnectCyclicMessage_pb2.CustomData, _Mapping]] = ...) -> None: ...
