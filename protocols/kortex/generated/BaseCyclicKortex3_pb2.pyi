from . import ActuatorCyclic_pb2 as _ActuatorCyclic_pb2
from . import CommonKortex3_pb2 as _CommonKortex3_pb2
from . import WristCyclicGeneric_pb2 as _WristCyclicGeneric_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BaseFeedback(_message.Message):
    __slots__ = ("active_state_connection_identifier", "active_state", "arm_voltage", "arm_current", "temperature_cpu", "temperature_ambient", "imu_acceleration_x", "imu_acceleration_y", "imu_acceleration_z", "imu_angular_velocity_x", "imu_angular_velocity_y", "imu_angular_velocity_z", "tool_pose_x", "tool_pose_y", "tool_pose_z", "tool_pose_theta_x", "tool_pose_theta_y", "tool_pose_theta_z", "tool_twist_linear_x", "tool_twist_linear_y", "tool_twist_linear_z", "tool_twist_angular_x", "tool_twist_angular_y", "tool_twist_angular_z", "tool_external_wrench_force_x", "tool_external_wrench_force_y", "tool_external_wrench_force_z", "tool_external_wrench_torque_x", "tool_external_wrench_torque_y", "tool_external_wrench_torque_z", "fault_bank_a", "fault_bank_b", "warning_bank_a", "warning_bank_b", "commanded_tool_pose_x", "commanded_tool_pose_y", "commanded_tool_pose_z", "commanded_tool_pose_theta_x", "commanded_tool_pose_theta_y", "commanded_tool_pose_theta_z", "operating_mode", "enabling_device_state", "scu_fault_bank_a", "scu_fault_bank_b", "scu_fault_bank_c", "scu_fault_bank_d", "is_emergency_stop_activated", "active_payload", "state_bank", "actual_speed_ratio")
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
    OPERATING_MODE_FIELD_NUMBER: _ClassVar[int]
    ENABLING_DEVICE_STATE_FIELD_NUMBER: _ClassVar[int]
    SCU_FAULT_BANK_A_FIELD_NUMBER: _ClassVar[int]
    SCU_FAULT_BANK_B_FIELD_NUMBER: _ClassVar[int]
    SCU_FAULT_BANK_C_FIELD_NUMBER: _ClassVar[int]
    SCU_FAULT_BANK_D_FIELD_NUMBER: _ClassVar[int]
    IS_EMERGENCY_STOP_ACTIVATED_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    STATE_BANK_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_SPEED_RATIO_FIELD_NUMBER: _ClassVar[int]
    active_state_connection_identifier: int
    active_state: _CommonKortex3_pb2.ArmState
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
    operating_mode: _CommonKortex3_pb2.OperatingModeType
    enabling_device_state: bool
    scu_fault_bank_a: int
    scu_fault_bank_b: int
    scu_fault_bank_c: int
    scu_fault_bank_d: int
    is_emergency_stop_activated: bool
    active_payload: float
    state_bank: int
    actual_speed_ratio: float
    def __init__(self, active_state_connection_identifier: _Optional[int] = ..., active_state: _Optional[_Union[_CommonKortex3_pb2.ArmState, str]] = ..., arm_voltage: _Optional[float] = ..., arm_current: _Optional[float] = ..., temperature_cpu: _Optional[float] = ..., temperature_ambient: _Optional[float] = ..., imu_acceleration_x: _Optional[float] = ..., imu_acceleration_y: _Optional[float] = ..., imu_acceleration_z: _Optional[float] = ..., imu_angular_velocity_x: _Optional[float] = ..., imu_angular_velocity_y: _Optional[float] = ..., imu_angular_velocity_z: _Optional[float] = ..., tool_pose_x: _Optional[float] = ..., tool_pose_y: _Optional[float] = ..., tool_pose_z: _Optional[float] = ..., tool_pose_theta_x: _Optional[float] = ..., tool_pose_theta_y: _Optional[float] = ..., tool_pose_theta_z: _Optional[float] = ..., tool_twist_linear_x: _Optional[float] = ..., tool_twist_linear_y: _Optional[float] = ..., tool_twist_linear_z: _Optional[float] = ..., tool_twist_angular_x: _Optional[float] = ..., tool_twist_angular_y: _Optional[float] = ..., tool_twist_angular_z: _Optional[float] = ..., tool_external_wrench_force_x: _Optional[float] = ..., tool_external_wrench_force_y: _Optional[float] = ..., tool_external_wrench_force_z: _Optional[float] = ..., tool_external_wrench_torque_x: _Optional[float] = ..., tool_external_wrench_torque_y: _Optional[float] = ..., tool_external_wrench_torque_z: _Optional[float] = ..., fault_bank_a: _Optional[int] = ..., fault_bank_b: _Optional[int] = ..., warning_bank_a: _Optional[int] = ..., warning_bank_b: _Optional[int] = ..., commanded_tool_pose_x: _Optional[float] = ..., commanded_tool_pose_y: _Optional[float] = ..., commanded_tool_pose_z: _Optional[float] = ..., commanded_tool_pose_theta_x: _Optional[float] = ..., commanded_tool_pose_theta_y: _Optional[float] = ..., commanded_tool_pose_theta_z: _Optional[float] = ..., operating_mode: _Optional[_Union[_CommonKortex3_pb2.OperatingModeType, str]] = ..., enabling_device_state: _Optional[bool] = ..., scu_fault_bank_a: _Optional[int] = ..., scu_fault_bank_b: _Optional[int] = ..., scu_fault_bank_c: _Optional[int] = ..., scu_fault_bank_d: _Optional[int] = ..., is_emergency_stop_activated: _Optional[bool] = ..., active_payload: _Optional[float] = ..., state_bank: _Optional[int] = ..., actual_speed_ratio: _Optional[float] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("frame_id", "actuators", "wrist")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    ACTUATORS_FIELD_NUMBER: _ClassVar[int]
    WRIST_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    actuators: _containers.RepeatedCompositeFieldContainer[_ActuatorCyclic_pb2.Command]
    wrist: _WristCyclicGeneric_pb2.Command
    def __init__(self, frame_id: _Optional[int] = ..., actuators: _Optional[_Iterable[_Union[_ActuatorCyclic_pb2.Command, _Mapping]]] = ..., wrist: _Optional[_Union[_WristCyclicGeneric_pb2.Command, _Mapping]] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("frame_id", "base", "actuators", "wrist")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    ACTUATORS_FIELD_NUMBER: _ClassVar[int]
    WRIST_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    base: BaseFeedback
    actuators: _containers.RepeatedCompositeFieldContainer[_ActuatorCyclic_pb2.Feedback]
    wrist: _WristCyclicGeneric_pb2.Feedback
    def __init__(self, frame_id: _Optional[int] = ..., base: _Optional[_Union[BaseFeedback, _Mapping]] = ..., actuators: _Optional[_Iterable[_Union[_ActuatorCyclic_pb2.Feedback, _Mapping]]] = ..., wrist: _Optional[_Union[_WristCyclicGeneric_pb2.Feedback, _Mapping]] = ...) -> None: ...

class CustomData(_message.Message):
    __slots__ = ("frame_id", "wrist_custom_data")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    WRIST_CUSTOM_DATA_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    wrist_custom_data: _WristCyclicGeneric_pb2.CustomData
    def __init__(self, frame_id: _Optional[int] = ..., wrist_custom_data: _Optional[_Union[_WristCyclicGeneric_pb2.CustomData, _Mapping]] = ...) -> None: ...
