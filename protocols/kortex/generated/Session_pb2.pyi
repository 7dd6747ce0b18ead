from . import Common_pb2 as _Common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateSessionInfo(_message.Message):
    __slots__ = ("username", "session_inactivity_timeout", "password", "connection_inactivity_timeout")
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_INACTIVITY_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_INACTIVITY_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    username: str
    session_inactivity_timeout: int
    password: str
    connection_inactivity_timeout: int
    def __init__(self, username: _Optional[str] = ..., session_inactivity_timeout: _Optional[int] = ..., password: _Optional[str] = ..., connection_inactivity_timeout: _Optional[int] = ...) -> None: ...

class ConnectionList(_message.Message):
    __slots__ = ("connection",)
    CONNECTION_FIELD_NUMBER: _ClassVar[int]
    connection: _containers.RepeatedCompositeFieldContainer[_Common_pb2.Connection]
    def __init__(self, connection: _Optional[_Iterable[_Union[_Common_pb2.Connection, _Mapping]]] = ...) -> None: ...
