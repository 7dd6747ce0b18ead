from . import Common_pb2 as _Common_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ServoingMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNSPECIFIED_SERVOING_MODE: _ClassVar[ServoingMode]
    SINGLE_LEVEL_SERVOING: _ClassVar[ServoingMode]
    LOW_LEVEL_SERVOING: _ClassVar[ServoingMode]
    BYPASS_SERVOING: _ClassVar[ServoingMode]
UNSPECIFIED_SERVOING_MODE: ServoingMode
SINGLE_LEVEL_SERVOING: ServoingMode
LOW_LEVEL_SERVOING: ServoingMode
BYPASS_SERVOING: ServoingMode

class ArmStateNotification(_message.Message):
    __slots__ = ("active_state", "timestamp", "connection")
    ACTIVE_STATE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_FIELD_NUMBER: _ClassVar[int]
    active_state: _Common_pb2.ArmState
    timestamp: _Common_pb2.Timestamp
    connection: _Common_pb2.Connection
    def __init__(self, active_state: _Optional[_Union[_Common_pb2.ArmState, str]] = ..., timestamp: _Optional[_Union[_Common_pb2.Timestamp, _Mapping]] = ..., connection: _Optional[_Union[_Common_pb2.Connection, _Mapping]] = ...) -> None: ...

class ServoingModeInformation(_message.Message):
    __slots__ = ("servoing_mode",)
    SERVOING_MODE_FIELD_NUMBER: _ClassVar[int]
    servoing_mode: ServoingMode
    def __init__(self, servoing_mode: _Optional[_Union[ServoingMode, str]] = ...) -> None: ...
