"""Tokens to a syntax tree, by recursive descent, with Aseba's operator precedence.

Precedence, loosest first: `or`; `and`; `not`; comparisons (`== != < <= > >=`, not chained);
`|`; `^`; `&`; `<< >>`; `+ -`; `* / %`; unary `- ~ abs`; then numbers, names, `name[i]`,
`name[i:j]`, `[...]` and parentheses.
"""

from __future__ import annotations

from collections.abc import Mapping

from protocols.aseba.compiler import syntax as s
from protocols.aseba.compiler.errors import CompileError
from protocols.aseba.compiler.lexer import Token, tokenize

ASSIGNMENTS = ("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "|=", "^=", "&=")
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
#: Binary operator levels from loosest to tightest, below the comparisons.
LEVELS: tuple[tuple[str, ...], ...] = (("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))
_BLOCK_END = ("end", "else", "elseif")


def parse(source: str, event_sizes: Mapping[str, int] | None = None) -> s.Program:
    """The syntax tree of `source`; `CompileError` at the first mistake.

    `event_sizes` (words, by global event name) tell whether `emit` takes an argument: as in
    Debian's compiler, an event of size 0 takes none, so `emit ping` then `a++` are two statements.
    """
    return _Parser(tokenize(source), event_sizes or {}).program()


class _Parser:
    def __init__(self, tokens: list[Token], event_sizes: Mapping[str, int]) -> None:
        self.tokens = tokens
        self.event_sizes = event_sizes
        self.position = 0
        #: True once a statement other than a declaration has been parsed (then `var` is refused).
        self.statements_seen = False

    # -- helpers -------------------------------------------------------------------------------

    @property
    def token(self) -> Token:
        return self.tokens[self.position]

    def take(self) -> Token:
        token = self.tokens[self.position]
        if token.kind != "end":
            self.position += 1
        return token

    def at(self, *texts: str) -> bool:
        token = self.token
        return token.kind in ("keyword", "symbol") and token.text in texts

    def error(self, expected: str, token: Token | None = None) -> CompileError:
        token = token or self.token
        return CompileError(f"expecting {expected}, found {token.text!r}", token.line, token.column)

    def expect(self, text: str) -> Token:
        if not self.at(text):
            raise self.error(f"'{text}'")
        return self.take()

    def name(self, what: str = "an identifier") -> Token:
        if self.token.kind != "name":
            raise self.error(what)
        return self.take()

    # -- program and statements ----------------------------------------------------------------

    def program(self) -> s.Program:
        first = self.token
        sections = [s.Section(first.line, first.column, "init", "", self.statements(top=True))]
        while self.token.kind != "end":
            token = self.take()
            if token.text not in ("onevent", "sub") or token.kind != "keyword":
                raise self.error("a statement", token)
            name = self.name("an event name" if token.text == "onevent" else "a subroutine name")
            self.statements_seen = True
            body = self.statements(top=True)
            sections.append(s.Section(token.line, token.column, token.text, name.text, body))
        return s.Program(tuple(sections))

    def statements(self, top: bool) -> tuple[s.Statement, ...]:
        body: list[s.Statement] = []
        while True:
            if self.token.kind == "end" or self.at("onevent", "sub"):
                if not top:
                    raise self.error("'end'")
                return tuple(body)
            if self.at(*_BLOCK_END):
                if top:
                    raise self.error("a statement")
                return tuple(body)
            statement = self.statement(top)
            self.statements_seen |= not isinstance(statement, s.VarDecl | s.ConstDecl)
            body.append(statement)

    def statement(self, top: bool) -> s.Statement:
        token = self.token
        if token.kind == "name":
            return self.assignment()
        if token.kind != "keyword":
            raise self.error("a statement")
        keyword = self.take().text
        line, column = token.line, token.column
        if keyword == "var" and (not top or self.statements_seen):
            raise CompileError(
                "variables are declared at the beginning of the program, before any other statement", line, column
            )
        if keyword == "var":
            name = self.name("a variable name")
            size: s.Expression | None = None
            sized = False
            if self.at("["):
                self.take()
                sized = True
                if not self.at("]"):
                    size = self.expression()
                self.expect("]")
            init = None
            if self.at("="):
                self.take()
                init = self.expression()
                if self.at(","):
                    # The old initialiser without brackets, `var a[3] = 1, 2, 3`, still accepted.
                    items = [init]
                    while self.at(","):
                        self.take()
                        items.append(self.expression())
                    init = s.ArrayLiteral(init.line, init.column, tuple(items))
            if sized and size is None and init is None:
                raise CompileError(f"array {name.text} needs a size or an initialiser", name.line, name.column)
            return s.VarDecl(line, column, name.text, size, sized, init)
        if keyword == "const":
            name = self.name("a constant name")
            self.expect("=")
            return s.ConstDecl(line, column, name.text, self.expression())
        if keyword == "if":
            branches = []
            condition = self.expression()
            self.expect("then")
            branches.append((condition, self.statements(top=False)))
            otherwise: tuple[s.Statement, ...] = ()
            while True:
                if self.at("elseif"):
                    self.take()
                    condition = self.expression()
                    self.expect("then")
                    branches.append((condition, self.statements(top=False)))
                elif self.at("else"):
                    self.take()
                    otherwise = self.statements(top=False)
                    self.expect("end")
                    break
                else:
                    self.expect("end")
                    break
            return s.If(line, column, tuple(branches), otherwise)
        if keyword in ("when", "while"):
            condition = self.expression()
            self.expect("do")
            body = self.block()
            if keyword == "when":
                return s.When(line, column, condition, body)
            return s.While(line, column, condition, body)
        if keyword == "for":
            variable = self.name("a variable name")
            self.expect("in")
            first = self.unary()
            self.expect(":")
            last = self.unary()
            step = None
            if self.at("step"):
                self.take()
                step = self.expression()
            self.expect("do")
            body = self.block()
            return s.For(line, column, s.Name(variable.line, variable.column, variable.text), first, last, step, body)
        if keyword in ("emit", "_emit"):
            event = self.name("an event name")
            argument = None
            if self.event_sizes.get(event.text) != 0 and self.starts_expression():
                argument = self.expression()
            return s.Emit(line, column, event.text, argument)
        if keyword == "call":
            native = self.name("a native function name")
            self.expect("(")
            arguments: list[s.Expression] = []
            if not self.at(")"):
                arguments.append(self.expression())
                while self.at(","):
                    self.take()
                    arguments.append(self.expression())
            self.expect(")")
            return s.Call(line, column, native.text, tuple(arguments))
        if keyword == "callsub":
            return s.CallSub(line, column, self.name("a subroutine name").text)
        if keyword == "return":
            return s.Return(line, column)
        raise self.error("a statement", token)

    def block(self) -> tuple[s.Statement, ...]:
        body = self.statements(top=False)
        if not self.at("end"):
            raise self.error("'end'")
        self.take()
        return body

    def assignment(self) -> s.Assign:
        token = self.token
        target = self.target()
        if self.at("++", "--"):
            return s.Assign(token.line, token.column, target, self.take().text, None)
        if not self.at(*ASSIGNMENTS):
            raise self.error("an assignment")
        op = self.take().text
        return s.Assign(token.line, token.column, target, op, self.expression())

    def target(self) -> s.Target:
        expression = self.postfix(self.name())
        assert isinstance(expression, s.Name | s.Index | s.Slice)
        return expression

    def starts_expression(self) -> bool:
        token = self.token
        return token.kind in ("name", "number") or self.at("(", "[", "-", "~", "abs", "not")

    # -- expressions ---------------------------------------------------------------------------

    def expression(self) -> s.Expression:
        return self.logical("or")

    def logical(self, op: str) -> s.Expression:
        left = self.logical("and") if op == "or" else self.negation()
        while self.at(op):
            token = self.take()
            right = self.logical("and") if op == "or" else self.negation()
            left = s.Binary(token.line, token.column, op, left, right)
        return left

    def negation(self) -> s.Expression:
        if self.at("not"):
            token = self.take()
            return s.Unary(token.line, token.column, "not", self.negation())
        return self.comparison()

    def comparison(self) -> s.Expression:
        left = self.binary(0)
        if self.at(*COMPARISONS):
            token = self.take()
            left = s.Binary(token.line, token.column, token.text, left, self.binary(0))
            if self.at(*COMPARISONS):
                token = self.token
                raise CompileError("comparisons do not chain: combine them with and, or", token.line, token.column)
        return left

    def binary(self, level: int) -> s.Expression:
        if level == len(LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.at(*LEVELS[level]):
            token = self.take()
            left = s.Binary(token.line, token.column, token.text, left, self.binary(level + 1))
        return left

    def unary(self) -> s.Expression:
        if self.at("-") and self.tokens[self.position + 1].kind == "number":
            token = self.take()
            number = self.take()
            if -number.value > 32767:
                # -0x8000 is -(-32768): it does not fit 16 bits (the reference refuses it too).
                raise CompileError(f"number -{number.text} is outside the 16-bit range", token.line, token.column)
            return s.Number(token.line, token.column, -number.value)
        if self.at("-", "~", "abs"):
            token = self.take()
            operand = self.unary()
            return s.Unary(token.line, token.column, token.text, operand)
        return self.primary()

    def primary(self) -> s.Expression:
        token = self.token
        if token.kind == "number":
            self.take()
            if token.value > 32767:
                raise CompileError(f"number {token.text} is outside the 16-bit range", token.line, token.column)
            return s.Number(token.line, token.column, token.value)
        if token.kind == "name":
            return self.postfix(self.take())
        if self.at("("):
            self.take()
            inner = self.expression()
            self.expect(")")
            return inner
        if self.at("["):
            self.take()
            items = [self.expression()]
            while self.at(","):
                self.take()
                items.append(self.expression())
            self.expect("]")
            return s.ArrayLiteral(token.line, token.column, tuple(items))
        raise self.error("an expression")

    def postfix(self, name: Token) -> s.Expression:
        if not self.at("["):
            return s.Name(name.line, name.column, name.text)
        self.take()
        first = self.expression()
        if self.at(":"):
            self.take()
            last = self.expression()
            self.expect("]")
            return s.Slice(name.line, name.column, name.text, first, last)
        self.expect("]")
        return s.Index(name.line, name.column, name.text, first)
