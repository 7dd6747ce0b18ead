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
    __slots__ = ("command_id", "flags", "position", "velocity", "torque_joint", "current_motor")
    COMMAND_ID_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    VELOCITY_FIELD_NUMBER: _ClassVar[int]
    TORQUE_JOINT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_MOTOR_FIELD_NUMBER: _ClassVar[int]
    command_id: MessageId
    flags: int
    position: float
    velocity: float
    torque_joint: float
    current_motor: float
    def __init__(self, command_id: _Optional[_Union[MessageId, _Mapping]] = ..., flags: _Optional[int] = ..., position: _Optional[float] = ..., velocity: _Optional[float] = ..., torque_joint: _Optional[float] = ..., current_motor: _Optional[float] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("feedback_id", "status_flags", "jitter_comm", "position", "velocity", "torque", "current_motor", "voltage", "temperature_motor", "temperature_core", "fault_bank_a", "fault_bank_b", "warning_bank_a", "warning_bank_b", "sfty_fault_bank_a", "fault_bank_c", "sfty_fault_bank_b")
    FEEDBACK_ID_FIELD_NUMBER: _ClassVar[int]
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
    SFTY_FAULT_BANK_A_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_C_FIELD_NUMBER: _ClassVar[int]
    SFTY_FAULT_BANK_B_FIELD_NUMBER: _ClassVar[int]
    feedback_id: MessageId
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
    sfty_fault_bank_a: int
    fault_bank_c: int
    sfty_fault_bank_b: int
    def __init__(self, feedback_id: _Optional[_Union[MessageId, _Mapping]] = ..., status_flags: _Optional[int] = ..., jitter_comm: _Optional[int] = ..., position: _Optional[float] = ..., velocity: _Optional[float] = ..., torque: _Optional[float] = ..., current_motor: _Optional[float] = ..., voltage: _Optional[float] = ..., temperature_motor: _Optional[float] = ..., temperature_core: _Optional[float] = ..., fault_bank_a: _Optional[int] = ..., fault_bank_b: _Optional[int] = ..., warning_bank_a: _Optional[int] = ..., warning_bank_b: _Optional[int] = ..., sfty_fault_bank_a: _Optional[int] = ..., fault_bank_c: _Optional[int] = ..., sfty_fault_bank_b: _Optional[int] = ...) -> None: ...
