from . import Common_pb2 as _Common_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ArmState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ARMSTATE_UNSPECIFIED: _ClassVar[ArmState]
    ARMSTATE_BASE_INITIALIZATION: _ClassVar[ArmState]
    ARMSTATE_IDLE: _ClassVar[ArmState]
    ARMSTATE_INITIALIZATION: _ClassVar[ArmState]
    ARMSTATE_IN_FAULT: _ClassVar[ArmState]
    ARMSTATE_MAINTENANCE: _ClassVar[ArmState]
    ARMSTATE_SERVOING_LOW_LEVEL: _ClassVar[ArmState]
    ARMSTATE_SERVOING_READY: _ClassVar[ArmState]
    ARMSTATE_SERVOING_PLAYING_SEQUENCE: _ClassVar[ArmState]
    ARMSTATE_SERVOING_MANUALLY_CONTROLLED: _ClassVar[ArmState]
    ARMSTATE_BRAKE_RELEASING: _ClassVar[ArmState]
    ARMSTATE_POSITION_UNKNOWN: _ClassVar[ArmState]
    ARMSTATE_ARM_OPERATIONAL: _ClassVar[ArmState]
    ARMSTATE_RECOVERY: _ClassVar[ArmState]
    ARMSTATE_CONTROLLER_INITIALIZATION: _ClassVar[ArmState]
    ARMSTATE_WAIT_FOR_POSITION_CONFIRMATION: _ClassVar[ArmState]
    ARMSTATE_IN_FAULT_POWERED_OFF: _ClassVar[ArmState]
    ARMSTATE_IN_UNRECOVERABLE_FAULT: _ClassVar[ArmState]

class NotificationSeverity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NOTIF_DEBUG: _ClassVar[NotificationSeverity]
    NOTIF_INFO: _ClassVar[NotificationSeverity]
    NOTIF_WARNING: _ClassVar[NotificationSeverity]
    NOTIF_ERROR: _ClassVar[NotificationSeverity]
    NOTIF_CRITICAL: _ClassVar[NotificationSeverity]

class OperatingModeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPERATING_MODE_UNSPECIFIED: _ClassVar[OperatingModeType]
    OPERATING_MODE_JOG_MANUAL: _ClassVar[OperatingModeType]
    OPERATING_MODE_HAND_GUIDING: _ClassVar[OperatingModeType]
    OPERATING_MODE_HOLD_TO_RUN: _ClassVar[OperatingModeType]
    OPERATING_MODE_AUTO: _ClassVar[OperatingModeType]
    OPERATING_MODE_MONITORED_STOP: _ClassVar[OperatingModeType]
ARMSTATE_UNSPECIFIED: ArmState
ARMSTATE_BASE_INITIALIZATION: ArmState
ARMSTATE_IDLE: ArmState
ARMSTATE_INITIALIZATION: ArmState
ARMSTATE_IN_FAULT: ArmState
ARMSTATE_MAINTENANCE: ArmState
ARMSTATE_SERVOING_LOW_LEVEL: ArmState
ARMSTATE_SERVOING_READY: ArmState
ARMSTATE_SERVOING_PLAYING_SEQUENCE: ArmState
ARMSTATE_SERVOING_MANUALLY_CONTROLLED: ArmState
ARMSTATE_BRAKE_RELEASING: ArmState
ARMSTATE_POSITION_UNKNOWN: ArmState
ARMSTATE_ARM_OPERATIONAL: ArmState
ARMSTATE_RECOVERY: ArmState
ARMSTATE_CONTROLLER_INITIALIZATION: ArmState
ARMSTATE_WAIT_FOR_POSITION_CONFIRMATION: ArmState
ARMSTATE_IN_FAULT_POWERED_OFF: ArmState
ARMSTATE_IN_UNRECOVERABLE_FAULT: ArmState
NOTIF_DEBUG: NotificationSeverity
NOTIF_INFO: NotificationSeverity
NOTIF_WARNING: NotificationSeverity
NOTIF_ERROR: NotificationSeverity
NOTIF_CRITICAL: NotificationSeverity
OPERATING_MODE_UNSPECIFIED: OperatingModeType
OPERATING_MODE_JOG_MANUAL: OperatingModeType
OPERATING_MODE_HAND_GUIDING: OperatingModeType
OPERATING_MODE_HOLD_TO_RUN: OperatingModeType
OPERATING_MODE_AUTO: OperatingModeType
OPERATING_MODE_MONITORED_STOP: OperatingModeType

class NotificationInformation(_message.Message):
    __slots__ = ("severity", "timestamp", "connection")
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_FIELD_NUMBER: _ClassVar[int]
    severity: NotificationSeverity
    timestamp: _Common_pb2.Timestamp
    connection: _Common_pb2.Connection
    def __init__(self, severity: _Optional[_Union[NotificationSeverity, str]] = ..., timestamp: _Optional[_Union[_Common_pb2.Timestamp, _Mapping]] = ..., connection: _Optional[_Union[_Common_pb2.Connection, _Mapping]] = ...) -> None: ...

class ModeSelection(_message.Message):
    __slots__ = ("operating_mode",)
    OPERATING_MODE_FIELD_NUMBER: _ClassVar[int]
    operating_mode: OperatingModeType
    def __init__(self, operating_mode: _Optional[_Union[OperatingModeType, str]] = ...) -> None: ...
