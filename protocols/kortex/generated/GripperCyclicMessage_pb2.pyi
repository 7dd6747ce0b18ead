from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MessageId(_message.Message):
    __slots__ = ("identifier",)
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    identifier: int
    def __init__(self, identifier: _Optional[int] = ...) -> None: ...

class MotorCommand(_message.Message):
    __slots__ = ("motor_id", "position", "velocity", "force")
    MOTOR_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    VELOCITY_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    motor_id: int
    position: float
    velocity: float
    force: float
    def __init__(self, motor_id: _Optional[int] = ..., position: _Optional[float] = ..., velocity: _Optional[float] = ..., force: _Optional[float] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("command_id", "flags", "motor_cmd")
    COMMAND_ID_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    MOTOR_CMD_FIELD_NUMBER: _ClassVar[int]
    command_id: MessageId
    flags: int
    motor_cmd: _containers.RepeatedCompositeFieldContainer[MotorCommand]
    def __init__(self, command_id: _Optional[_Union[MessageId, _Mapping]] = ..., flags: _Optional[int] = ..., motor_cmd: _Optional[_Iterable[_Union[MotorCommand, _Mapping]]] = ...) -> None: ...

class MotorFeedback(_message.Message):
    __slots__ = ("motor_id", "position", "velocity", "current_motor", "voltage", "temperature_motor")
    MOTOR_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    VELOCITY_FIELD_NUMBER: _ClassVar[int]
    CURRENT_MOTOR_FIELD_NUMBER: _ClassVar[int]
    VOLTAGE_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_MOTOR_FIELD_NUMBER: _ClassVar[int]
    motor_id: int
    position: float
    velocity: float
    current_motor: float
    voltage: float
    temperature_motor: float
    def __init__(self, motor_id: _Optional[int] = ..., position: _Optional[float] = ..., velocity: _Optional[float] = ..., current_motor: _Optional[float] = ..., voltage: _Optional[float] = ..., temperature_motor: _Optional[float] = ...) -> None: ...

class Feedback(_message.Message):
    __slots__ = ("feedback_id", "status_flags", "fault_bank_a", "fault_bank_b", "warning_bank_a", "warning_bank_b", "motor")
    FEEDBACK_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FLAGS_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_A_FIELD_NUMBER: _ClassVar[int]
    FAULT_BANK_B_FIELD_NUMBER: _ClassVar[int]
    WARNING_BANK_A_FIELD_NUMBER: _ClassVar[int]
    WARNING_BANK_B_FIELD_NUMBER: _ClassVar[int]
    MOTOR_FIELD_NUMBER: _ClassVar[int]
    feedback_id: MessageId
    status_flags: int
    fault_bank_a: int
    fault_bank_b: int
    warning_bank_a: int
    warning_bank_b: int
    motor: _containers.RepeatedCompositeFieldContainer[MotorFeedback]
    def __init__(self, feedback_id: _Optional[_Union[MessageId, _Mapping]] = ..., status_flags: _Optional[int] = ..., fault_bank_a: _Optional[int] = ..., fault_bank_b: _Optional[int] = ..., warning_bank_a: _Optional[int] = ..., warning_bank_b: _Optional[int] = ..., motor: _Optional[_Iterable[_Union[MotorFeedback, _Mapping]]] = ...) -> None: ...
