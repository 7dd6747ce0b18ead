from . import CommonKortex3_pb2 as _CommonKortex3_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ArmStateNotification(_message.Message):
    __slots__ = ("active_state", "generic_info")
    ACTIVE_STATE_FIELD_NUMBER: _ClassVar[int]
    GENERIC_INFO_FIELD_NUMBER: _ClassVar[int]
    active_state: _CommonKortex3_pb2.ArmState
    generic_info: _CommonKortex3_pb2.NotificationInformation
    def __init__(self, active_state: _Optional[_Union[_CommonKortex3_pb2.ArmState, str]] = ..., generic_info: _Optional[_Union[_CommonKortex3_pb2.NotificationInformation, _Mapping]] = ...) -> None: ...
