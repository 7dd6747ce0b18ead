"""The error every compiler stage raises: a message and the position it refers to."""

from __future__ import annotations

from protocols.errors import ProtocolError


class CompileError(ProtocolError):
    """A script breaks a rule of the Aseba language; `line` and `column` count from 1."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
