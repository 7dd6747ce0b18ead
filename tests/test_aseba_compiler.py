"""The Aseba compiler without peers: broken scripts and their messages, semantics on the Python VM, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.cli import main
from protocols.aseba.compiler import CompiledScript, CompileError, EventSpec, compile_script, parse_aesl
from protocols.aseba.compiler.description_file import load_description
from protocols.aseba.compiler.lexer import tokenize
from protocols.aseba.description import NodeDescription
from protocols.aseba.natives import STANDARD_NATIVES
from protocols.aseba.vm import AsebaVM
from protocols.errors import ProtocolError
from tests.fuzzing import fuzz_settings
from tests.test_aseba_vm import VECTOR, playground_description

CORPUS = Path(__file__).parent / "data" / "aseba_corpus"
EVENTS = (EventSpec("ev", 2),)

#: 40 subroutines, each calling the one before: s39 needs 40 return addresses on the stack.
SUBROUTINE_CHAIN = "".join(f"sub s{k}\n" + ("n++\n" if k == 0 else f"callsub s{k - 1}\n") for k in range(40))

#: Broken scripts: (source, line, column, message). Those after a "Debian" comment were also
#: given to Debian's compiler, which reports them at the same line and column (in its own words).
BROKEN = [
    # Debian: "Size error! Size of array1 = 3 ; size of array2 = 1"
    ("var a[3]\nvar b[3]\nvar d[3]\nd = b * 2 - a", 4, 7, "size mismatch: 3 words * 1 words"),
    ("var x\nx = y", 2, 5, "y is not a defined variable"),
    ("var x\nx = 1 +", 2, 8, "expecting an expression, found 'end of file'"),
    ("var a[3]\na = [1, 2]", 2, 1, "size mismatch: assigning 2 words to 3 words"),
    ("var a[3]\na[3] = 1", 2, 1, "index 3 is outside array a of size 3"),
    ("var a[3]\nvar b\nb = a[1:4]", 3, 5, "slice [1:4] is outside array a of size 3"),
    ("var x = 40000", 1, 9, "number 40000 is outside the 16-bit range"),
    ("var x\nx = 0x10000", 2, 5, "number 0x10000 is outside the 16-bit range"),
    ("var x\nx = 32768", 2, 5, "number 32768 is outside the 16-bit range"),
    ("var x\nif x then\nx = 1\n", 4, 1, "expecting 'end', found 'end of file'"),
    ("var x\nwhile x < 3 do\nx++\n", 4, 1, "expecting 'end', found 'end of file'"),
    ("var x\nx = 5 / 0", 2, 7, "division by zero"),
    # Debian: "Variable definition is allowed only at the beginning of the program before any statement"
    ("var x\nx = 1\nvar y", 3, 1, "variables are declared at the beginning of the program, before any other statement"),
    ("var x\nemit nothing", 2, 1, "nothing is not a defined event"),
    ("var x\nemit ev", 2, 1, "event ev carries 2 words, none given"),
    ("var x\nemit ev [1, 2, 3]", 2, 9, "event ev carries 2 words, 3 given"),
    ("emit button.center", 1, 1, "button.center is a local event of the node and cannot be emitted"),
    ("var a[3]\ncall math.fill(a)", 2, 1, "math.fill takes 2 arguments, 1 given"),
    ("var a[3]\nvar b[2]\ncall math.copy(a, b)", 3, 19,
     "argument src of math.copy must have 3 words like the others, not 2"),
    ("call no.such(1)", 1, 1, "no.such is not a native function of node thymio-II"),
    ("callsub missing", 1, 1, "subroutine missing is not defined"),
    ("var x\nx = 1 < 2", 2, 7, "< is only allowed in a condition (if, elseif, when, while)"),
    ("var x\nx = not x", 2, 5, "not is only allowed in a condition (if, elseif, when, while)"),
    ("var x\nfor x in 5:1 do\nend", 2, 1, "the for loop range 5:1 with step 1 is empty"),
    ("var x\nfor x in 0:4 step 0 do\nend", 2, 19, "the step of a for loop cannot be 0"),
    ("var x\nfor x in 0:x do\nend", 2, 12, "a for loop bound must be a constant expression"),
    ("var x\nx = 1 @ 2", 2, 7, "unexpected character '@'"),
    ("#* open comment\nvar x", 1, 1, "unbalanced comment: #* without *#"),
    ("var x\nvar x", 2, 1, "x is already defined"),
    ("var _id", 1, 1, "_id is already defined"),
    ("const C = 1\nC = 2", 2, 1, "C is a constant and cannot be assigned"),
    ("onevent no_event\n", 1, 1, "no_event is not a defined event"),
    ("onevent ev\nonevent ev\n", 2, 1, "event ev already has a handler"),
    ("sub s\nsub s\n", 2, 1, "subroutine s is already defined"),
    ("var x\nx = 1 < 2 < 3", 2, 11, "comparisons do not chain: combine them with and, or"),
    ("var a[2]\nvar x\nx = a + 1", 3, 7, "size mismatch: 2 words + 1 words"),
    ("var x[0]", 1, 1, "array x must have a size of at least 1, not 0"),
    ("var x\nend", 2, 1, "expecting a statement, found 'end'"),
    ("var x\nx += [1, 2]", 2, 1, "size mismatch: 1 words + 2 words"),
    # Debian: "Expecting do keyword, found - (minus) instead"
    ("var x\nvar i\nfor i in 0:5 - 2 do\nend", 3, 14, "expecting 'do', found '-'"),
    # Debian: "Variable definition is allowed only at the beginning of the program before any statement"
    ("var x\nonevent ev\nvar late", 3, 1,
     "variables are declared at the beginning of the program, before any other statement"),
    ("var big[600]", 1, 1, "not enough memory for big: the node has 586 words"),
    ("var x\nx = " + "(x + " * 32 + "x" + ")" * 32, 2, 1,
     "the execution stack will overflow: this code needs 33 words (subroutine calls and expressions), "
     "node thymio-II has 32"),
    # Issue 13, defect 2 (Debian: "Execution stack will overflow, check for any recursive subroutine call")
    ("var n = 0\nonevent ev\ncallsub down\nsub down\nn++\ncallsub down", 6, 1,
     "recursive call of subroutine down (down -> down): the execution stack will overflow"),
    ("var n = 0\nonevent ev\ncallsub a\nsub a\ncallsub b\nsub b\nn++\ncallsub a", 8, 1,
     "recursive call of subroutine a (a -> b -> a): the execution stack will overflow"),
    ("var n = 0\nonevent ev\ncallsub s39\n" + SUBROUTINE_CHAIN, 3, 1,
     "the execution stack will overflow: this code needs 42 words (subroutine calls and expressions), "
     "node thymio-II has 32"),
    # Issue 13, defect 4 (Debian refuses each of them)
    ("var i\nvar j\nfor i in 0:32767 do\nj = i\nend", 3, 12,
     "the for loop 0:32767 step 1 never ends: i cannot pass 32767 in 16 bits"),
    ("var i\nfor i in 0:-32768 step -1 do\nend", 2, 12,
     "the for loop 0:-32768 step -1 never ends: i cannot pass -32768 in 16 bits"),
    ("var a = 1\nvar c\nc = a / 0", 3, 7, "division by zero"),
    ("var a = 1\nvar c\nc = a % (a * 0)", 3, 7, "division by zero"),
    ("var a = 1\nvar c\nc /= 0", 3, 1, "division by zero"),
    ("var i\nif i then\ni = 0\nend", 2, 4, "a condition must be a comparison, and, or, not: found an integer"),
    ("var i\nwhile i do\ni = 0\nend", 2, 7, "a condition must be a comparison, and, or, not: found an integer"),
    ("var a\nvar b\nwhen a and b < 1 do\nend", 3, 6,
     "a condition must be a comparison, and, or, not: found an integer"),
    ("var a\nif not a then\nend", 2, 8, "a condition must be a comparison, and, or, not: found an integer"),
    ("var foo[3] = [1, 2]", 1, 1, "size mismatch: assigning 2 words to 3 words"),
    ("var foo[3] = 1, 2, 3, 4", 1, 1, "size mismatch: assigning 4 words to 3 words"),
    ("var i = -0x8000", 1, 9, "number -0x8000 is outside the 16-bit range"),
    ("var i = -0b1000000000000000", 1, 9, "number -0b1000000000000000 is outside the 16-bit range"),
    ("var i = abs -32768", 1, 9, "abs(-32768) does not fit 16 bits"),
    ("var i\nwhile 1 == 1 do\ni++\nend", 2, 9, "infinite loop: the condition of this while is always true"),
    # Hostile input: nesting deeper than the compiler's recursion is an error, not a crash.
    ("var x\nx = " + "(" * 3000 + "x" + ")" * 3000, 1, 1, "the program is nested too deeply to compile"),
    ("var x\nx = " + "- " * 3000 + "x", 1, 1, "the program is nested too deeply to compile"),
    ("var x\nx = x" + " + x" * 3000, 1, 1, "the program is nested too deeply to compile"),
]  # fmt: skip


@pytest.mark.parametrize(("source", "line", "column", "message"), BROKEN)
def test_broken_scripts_are_refused_with_message_and_position(
    source: str, line: int, column: int, message: str
) -> None:
    with pytest.raises(CompileError) as caught:
        compile_script(source, playground_description(), EVENTS)
    assert (caught.value.line, caught.value.column, caught.value.message) == (line, column, message)
    assert str(caught.value) == f"{line}:{column}: {message}"
    assert isinstance(caught.value, ProtocolError)


def run(source: str, *events: tuple[int, tuple[int, ...]]) -> dict[str, list[int]]:
    d = playground_description()
    compiled = compile_script(source, d, EVENTS)
    vm = AsebaVM(1, d, STANDARD_NATIVES)
    vm.set_bytecode(0, compiled.bytecode)
    vm.start()
    vm.run()
    for event_id, words in events:
        vm.user_event(0, event_id, words)
        vm.run()
    return {n: vm.variables[v.address : v.address + v.size] for n, v in compiled.variables.items()}


def test_numbers_comments_and_precedence() -> None:
    tokens = tokenize("0x1F 0b101 -32768 a.b_c #* x *# # y\n<<=")
    assert [t.text for t in tokens] == ["0x1F", "0b101", "-", "32768", "a.b_c", "<<=", "end of file"]
    result = run("var r[6]\nr = [1 + 2 * 3, (1 + 2) * 3, 7 - 2 - 1, 1 << 2 + 1, 6 | 3 & 1, -32768]")
    assert result["r"] == [7, 9, 4, 8, 7, -32768]


def test_a_very_long_call_chain_is_refused_without_exhausting_the_recursion() -> None:
    chain = "".join(f"sub s{k}\n" + ("n++\n" if k == 0 else f"callsub s{k - 1}\n") for k in range(2000))
    with pytest.raises(CompileError, match="the execution stack will overflow: more than 256 nested subroutine calls"):
        compile_script("var n = 0\nonevent ev\ncallsub s1999\n" + chain, playground_description(), EVENTS)


def test_wrap_around_and_c_division() -> None:
    result = run("var r[6]\nvar a = 30000\nvar b = -7\nr = [a + a, a * 3, b / 3, b % 2, abs -32767, b / 2]")
    # b / 3 is the VM's C division (toward zero); b / 2 is a shift, as Debian's compiler writes it.
    assert result["r"] == [-5536, 24464, -2, -1, 32767, -4]


def test_when_fires_on_the_rising_edge_only() -> None:
    source = "var n = 0\nonevent ev\nwhen event.args[0] > 0 do\nn++\nend"
    assert run(source, (0, (1, 0)), (0, (2, 0)), (0, (0, 0)), (0, (3, 0)))["n"] == [2]


def test_aesl_programs_are_picked_by_node_name_and_id() -> None:
    aesl = parse_aesl(
        '<network><event name="a" size="1"/><constant name="K" value="65535"/>'
        '<node name="thymio-II" nodeId="2">var two</node><node name="thymio-II" nodeId="0">var any</node>'
        '<node name="other" nodeId="1">var other</node></network>'
    )
    assert aesl.events == (EventSpec("a", 1),)
    assert aesl.constants == {"K": -1}
    assert aesl.program_for("thymio-II", 2).source == "var two"
    assert aesl.program_for("thymio-II", 1).source == "var any"
    with pytest.raises(ProtocolError, match="no program"):
        aesl.program_for("dummynode", 1)
    with pytest.raises(ProtocolError, match="entities"):
        parse_aesl('<!DOCTYPE x [<!ENTITY a "b">]><network/>')


def test_description_file_loads_the_playground_thymio() -> None:
    description = load_description(VECTOR.read_text())
    assert description == playground_description()
    with pytest.raises(ProtocolError, match="pair"):
        load_description("[[1]]")


def test_cli_prints_a_listing(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["aseba", "compile", str(CORPUS / "20_emit.aesl"), "--description", str(VECTOR)])
    out = capsys.readouterr().out
    assert status == 0
    assert "for thymio-II: 56 words" in out
    assert "emit 2 address 2 size 2" in out
    assert "; event 4 one [1]" in out


def test_cli_reports_compile_errors_with_position(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.aesl"
    broken.write_text('<network><node name="thymio-II" nodeId="1">var x\nx = y</node></network>')
    status = main(["aseba", "compile", str(broken), "--description", str(VECTOR)])
    assert status == 1
    assert f"{broken}:2:5: y is not a defined variable" in capsys.readouterr().err


#: Issue 13, defect 6: two errors, the first in the text being in the handler laid out last.
TWO_ERRORS = """<!DOCTYPE aesl-source>
<network>
<event size="1" name="b"/>
<event size="1" name="a"/>
<node nodeId="1" name="thymio-II">var x
onevent a
if x &lt; 1 then x = y end
onevent b
x = z
</node>
</network>
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TWO_ERRORS, "7:22: y is not a defined variable"),
        # The init code is laid out after every handler; its error is still the first reported.
        (TWO_ERRORS.replace("var x\n", "var x\nx = q\n"), "6:5: q is not a defined variable"),
        (
            TWO_ERRORS.replace('name="thymio-II">var x', 'name="thymio-II">\n\n  var x x'),
            "8:1: expecting an assignment, found 'onevent'",
        ),
    ],
)
def test_cli_reports_the_first_error_at_its_line_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    broken = tmp_path / "two-errors.aesl"
    broken.write_text(text)
    assert main(["aseba", "compile", str(broken), "--description", str(VECTOR)]) == 1
    assert f"{broken}:{expected}" in capsys.readouterr().err


def test_the_corpus_uses_every_construct() -> None:
    seen: set[str] = set()
    scripts = sorted(CORPUS.glob("*.aesl"))
    for path in scripts:
        aesl = parse_aesl(path.read_text())
        seen |= {token.text for program in aesl.programs for token in tokenize(program.source)}
        source = aesl.programs[0].source
        seen |= {"#*"} if "#*" in source else set()
        seen |= {"#"} if "# " in source else set()
    required = {
        *("#", "#*", "const", "var", "if", "then", "elseif", "else", "end", "when", "while", "do"),
        *("for", "in", "step", "onevent", "sub", "callsub", "call", "emit", "_emit", "return", "abs"),
        *("and", "or", "not", "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "|=", "^=", "&=", "++", "--"),
        *("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "~", "==", "!=", "<", "<=", ">", ">=", "[", ":"),
    }
    assert required <= seen, required - seen
    assert len(scripts) >= 30


#: Words of the language and a few that are not: joined at random they make mostly broken programs,
#: some of them nested deeply, with numbers at and past the 16-bit bounds.
ASEBA_WORDS = [
    *("var", "const", "if", "then", "elseif", "else", "end", "when", "do", "while", "for", "in", "step"),
    *("sub", "callsub", "onevent", "emit", "call", "return", "abs", "not", "and", "or"),
    *("x", "y", "a", "ev", "timer", "leds.top", "motor.left.target", "event.args", "math.fill", "math.dot"),
    *("[", "]", "(", ")", ",", ":", "=", "+", "-", "*", "/", "%", "<<", ">>", "|", "&", "^", "~"),
    *("==", "!=", "<", ">", "<=", ">=", "++", "--", "+=", "%=", "<<=", "\n", "#", "#*", "*#"),
    *("0", "1", "3", "32767", "32768", "-32768", "0x7fff", "0x10000", "0b102", "99999999999999999999"),
    *("@", "$", "é", "\x00", "\t"),
]
ASEBA_PREFIXES = ["var x\n", "var y = 2\n", "var a[3]\n", "sub s\n", "onevent ev\n"]


def _compile_or_refuse(source: str, description: NodeDescription) -> CompiledScript | CompileError:
    try:
        return compile_script(source, description, EVENTS, {"K": 3})
    except CompileError as error:
        return error


@given(
    st.lists(st.sampled_from(ASEBA_PREFIXES), max_size=3),
    st.lists(st.sampled_from(ASEBA_WORDS), max_size=120) | st.text(max_size=200).map(lambda text: [text]),
)
@pytest.mark.fuzz
@fuzz_settings(300)
def test_no_source_crashes_the_compiler_or_the_vm(prefixes: list[str], words: list[str]) -> None:
    source = "".join(prefixes) + " ".join(words)
    description = playground_description()
    compiled = _compile_or_refuse(source, description)
    if isinstance(compiled, CompileError):
        assert compiled.line >= 1, compiled
        assert compiled.column >= 1, compiled
        return
    assert len(compiled.bytecode) <= description.bytecode_size
    vm = AsebaVM(1, description, STANDARD_NATIVES)
    vm.set_bytecode(0, compiled.bytecode)
    vm.start()
    vm.run(5000)  # a fault stops the VM with its report queued, never an exception
    vm.user_event(0, 0, (7, -3))
    vm.run(5000)
