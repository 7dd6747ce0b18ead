"""Aseba source to tokens: identifiers (dots allowed inside), keywords, numbers, operators.

Comments are `# ...` to the end of the line and `#* ... *#` blocks. Numbers are decimal
(at most 32767, or 32768 right after a minus sign), hexadecimal `0x` or binary `0b` (at most
16 bits, read as signed words).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.aseba.compiler.errors import CompileError

KEYWORDS = frozenset(
    (
        "when", "emit", "_emit", "for", "in", "step", "while", "do", "if", "then", "else", "elseif",
        "end", "var", "const", "call", "sub", "callsub", "onevent", "abs", "return", "and", "or", "not",
    )
)  # fmt: skip
#: Operators and punctuation, longest first so that `<<=` wins over `<<` and `<`.
SYMBOLS = (
    "<<=", ">>=", "==", "!=", "<=", ">=", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "|=", "^=", "&=",
    "++", "--", "+", "-", "*", "/", "%", "|", "^", "&", "~", "<", ">", "=", "(", ")", "[", "]", ":", ",",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Token:
    """One token: `kind` is "name", "number", "keyword", "symbol" or "end"; `text` as written."""

    kind: str
    text: str
    line: int
    column: int
    value: int = 0


def tokenize(source: str) -> list[Token]:
    """The tokens of `source`, ending with an "end" token; `CompileError` on a bad character."""
    tokens: list[Token] = []
    i, line, column = 0, 1, 1
    n = len(source)

    def advance(count: int) -> None:
        nonlocal i, line, column
        for _ in range(count):
            if source[i] == "\n":
                line, column = line + 1, 1
            else:
                column += 1
            i += 1

    while i < n:
        c = source[i]
        if c in " \t\r\n":
            advance(1)
        elif c == "#":
            if source.startswith("#*", i):
                start_line, start_column = line, column
                close = source.find("*#", i + 2)
                if close < 0:
                    raise CompileError("unbalanced comment: #* without *#", start_line, start_column)
                advance(close + 2 - i)
            else:
                while i < n and source[i] != "\n":
                    advance(1)
        elif c.isalpha() or c == "_":
            j = i + 1
            while j < n and (source[j].isalnum() or source[j] in "_."):
                j += 1
            text = source[i:j]
            tokens.append(Token("keyword" if text in KEYWORDS else "name", text, line, column))
            advance(j - i)
        elif c.isdigit():
            j = i + 1
            while j < n and (source[j].isalnum() or source[j] == "_"):
                j += 1
            text = source[i:j]
            tokens.append(Token("number", text, line, column, _number(text, line, column)))
            advance(j - i)
        else:
            for symbol in SYMBOLS:
                if source.startswith(symbol, i):
                    tokens.append(Token("symbol", symbol, line, column))
                    advance(len(symbol))
                    break
            else:
                raise CompileError(f"unexpected character {c!r}", line, column)
    tokens.append(Token("end", "end of file", line, column))
    return tokens


def _number(text: str, line: int, column: int) -> int:
    lower = text.lower()
    try:
        if lower.startswith("0x"):
            value, limit = int(lower[2:], 16), 0xFFFF
        elif lower.startswith("0b"):
            value, limit = int(lower[2:], 2), 0xFFFF
        else:
            value, limit = int(text, 10), 32768  # 32768 only after a minus sign (parser)
    except ValueError:
        raise CompileError(f"malformed number {text!r}", line, column) from None
    if value > limit:
        raise CompileError(f"number {text} is outside the 16-bit range", line, column)
    return value - 0x10000 if value > 32768 or (value == 32768 and limit == 0xFFFF) else value
