from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NotificationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NOTIFICATION_TYPE_UNSPECIFIED: _ClassVar[NotificationType]
    NOTIFICATION_TYPE_THRESHOLD: _ClassVar[NotificationType]
    NOTIFICATION_TYPE_FIX_RATE: _ClassVar[NotificationType]
    NOTIFICATION_TYPE_EVENT: _ClassVar[NotificationType]

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
    ARMSTATE_RESERVED: _ClassVar[ArmState]
NOTIFICATION_TYPE_UNSPECIFIED: NotificationType
NOTIFICATION_TYPE_THRESHOLD: NotificationType
NOTIFICATION_TYPE_FIX_RATE: NotificationType
NOTIFICATION_TYPE_EVENT: NotificationType
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
ARMSTATE_RESERVED: ArmState

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NotificationOptions(_message.Message):
    __slots__ = ("type", "rate_m_sec", "threshold_value")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    RATE_M_SEC_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_VALUE_FIELD_NUMBER: _ClassVar[int]
    type: NotificationType
    rate_m_sec: int
    threshold_value: float
    def __init__(self, type: _Optional[_Union[NotificationType, str]] = ..., rate_m_sec: _Optional[int] = ..., threshold_value: _Optional[float] = ...) -> None: ...

class NotificationHandle(_message.Message):
    __slots__ = ("identifier",)
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    identifier: int
    def __init__(self, identifier: _Optional[int] = ...) -> None: ...

class Timestamp(_message.Message):
    __slots__ = ("sec", "usec")
    SEC_FIELD_NUMBER: _ClassVar[int]
    USEC_FIELD_NUMBER: _ClassVar[int]
    sec: int
    usec: int
    def __init__(self, sec: _Optional[int] = ..., usec: _Optional[int] = ...) -> None: ...

class UserProfileHandle(_message.Message):
    __slots__ = ("identifier", "permission")
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    identifier: int
    permission: int
    def __init__(self, identifier: _Optional[int] = ..., permission: _Optional[int] = ...) -> None: ...

class Connection(_message.Message):
    __slots__ = ("user_handle", "connection_information", "connection_identifier")
    USER_HANDLE_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_INFORMATION_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    user_handle: UserProfileHandle
    connection_information: str
    connection_identifier: int
    def __init__(self, user_handle: _Optional[_Union[UserProfileHandle, _Mapping]] = ..., connection_information: _Optional[str] = ..., connection_identifier: _Optional[int] = ...) -> None: ...
