"""Many values checked at once (nested messages by columns, arrays of arrays, integers) and large payloads in steps.

Each fast path must give exactly what element-by-element parsing gives: the same values of the
same types for valid data, and for invalid data the same error text naming the first bad element
(path with index, bound, value).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.commands import CommandRouter
from gateway.errors import InvalidArgument
from gateway.messages.asebaros import LoadScript, SetVariable
from gateway.messages.common import Header, Time
from gateway.messages.schema import (
    BOOL,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Array,
    Float,
    Int,
    Nested,
    Str,
    from_plain,
    structure,
    work_of,
)
from gateway.messages.stepwise import STEP, from_plain_steps, run

_UNIT = Float(32, 0.0, 1.0)


@structure  # not registered: the bus and its schemas do not see it
class Flat:
    """Every scalar spec, one field each, with defaults that are not zero."""

    count: Annotated[int, Int(16, minimum=-500, maximum=500)] = 7
    word: Annotated[int, U16] = 0
    ratio: Annotated[float, _UNIT] = 0.5
    flag: Annotated[bool, BOOL] = True
    label: Annotated[str, Str(4)] = "run"


@structure
class Deep:
    """Elements with a nested message, an array and a nested array (their columns parsed one by one)."""

    header: Annotated[Header, Nested(Header)] = Header()
    words: Annotated[tuple[int, ...], Array(I16, max_length=64)] = ()
    triples: Annotated[tuple[tuple[float, ...], ...], Array(Array(_UNIT, 3), max_length=64)] = ()


@structure
class Holder:
    """Long arrays of every shape the fast paths take."""

    flats: Annotated[tuple[Flat, ...], Array(Nested(Flat), max_length=8192)] = ()
    deeps: Annotated[tuple[Deep, ...], Array(Nested(Deep), max_length=8192)] = ()
    triples: Annotated[tuple[tuple[float, ...], ...], Array(Array(_UNIT, 3), max_length=8192)] = ()
    rows: Annotated[tuple[tuple[int, ...], ...], Array(Array(I16, max_length=5), max_length=8192)] = ()
    names: Annotated[tuple[str, ...], Array(Str(4), max_length=8192)] = ()
    flags: Annotated[tuple[bool, ...], Array(BOOL, max_length=8192)] = ()


FLAT = {"count": -500, "word": 65535, "ratio": 1, "flag": False, "label": "abcd"}
FLATS = [FLAT] * 2000
#: Far enough in to cross chunks of the array (1024 elements) and steps of the payload.
AT = 1500


def _with(values: list[Any], index: int, value: Any) -> list[Any]:
    return [*values[:index], value, *values[index + 1 :]]


def test_nested_messages_by_columns_equal_the_element_wise_ones() -> None:
    parsed = from_plain(Holder, {"flats": [*FLATS, {}, {"word": 3.0}]}).flats
    expected = Flat(-500, 65535, 1.0, False, "abcd")
    assert parsed[:AT] == (expected,) * AT
    assert parsed[-2] == Flat()  # every field left out takes the dataclass's default (not the spec's zero)
    assert parsed[-1] == Flat(word=3)
    assert [type(value) for value in (parsed[0].ratio, parsed[-1].word, parsed[-2].label)] == [float, int, str]
    element_wise = [from_plain(Flat, element) for element in [*FLATS, {}, {"word": 3.0}]]
    assert list(parsed) == element_wise


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (7, f"data.flats[{AT}]: expected an object, got int"),
        (None, f"data.flats[{AT}]: expected an object, got null"),
        ([1], f"data.flats[{AT}]: expected an object, got list"),
        ({**FLAT, "colour": 1}, f"data.flats[{AT}]: unknown field 'colour' (fields: count, flag, label, ratio, word)"),
        ({**FLAT, "count": 501}, f"data.flats[{AT}].count: 501 is outside [-500, 500]"),
        ({**FLAT, "count": True}, f"data.flats[{AT}].count: expected an integer, got bool"),
        ({**FLAT, "count": 1.5}, f"data.flats[{AT}].count: expected an integer, got float"),
        ({**FLAT, "word": -1}, f"data.flats[{AT}].word: -1 is outside [0, 65535]"),
        ({**FLAT, "word": 2**64}, f"data.flats[{AT}].word: {2**64} is outside [0, 65535]"),
        ({**FLAT, "word": "1"}, f"data.flats[{AT}].word: expected an integer, got str"),
        ({**FLAT, "ratio": 1.5}, f"data.flats[{AT}].ratio: 1.5 is above the maximum 1.0"),
        ({**FLAT, "ratio": float("nan")}, f"data.flats[{AT}].ratio: must be finite"),
        ({**FLAT, "ratio": None}, f"data.flats[{AT}].ratio: expected a number, got null"),
        ({**FLAT, "flag": 1}, f"data.flats[{AT}].flag: expected a boolean, got int"),
        ({**FLAT, "label": "abcde"}, f"data.flats[{AT}].label: longer than 4 characters"),
        ({**FLAT, "label": b"ab"}, f"data.flats[{AT}].label: expected a string, got bytes"),
    ],
)
def test_a_bad_nested_element_is_named_as_element_wise_parsing_names_it(bad: object, error: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        from_plain(Holder, {"flats": _with(FLATS, AT, bad)})
    assert refused.value.message == error
    with pytest.raises(InvalidArgument) as alone:
        from_plain(Holder, {"flats": [bad]})  # one element: parsed on its own, no fast path
    assert alone.value.message == error.replace(f"[{AT}]", "[0]")


def test_the_first_bad_element_is_named_when_several_are_bad() -> None:
    flats = _with(_with(FLATS, AT, {**FLAT, "word": -1}), AT + 300, 7)
    flats = _with(flats, AT - 1, {**FLAT, "label": 5})  # earlier, in another field
    with pytest.raises(InvalidArgument) as refused:
        from_plain(Holder, {"flats": flats})
    assert refused.value.message == f"data.flats[{AT - 1}].label: expected a string, got int"


DEEP = {"header": {"stamp": {"sec": 1, "nanosec": 2}, "frame_id": "f"}, "words": [1, 2, 3], "triples": [[0, 0.5, 1]]}


def test_elements_with_nested_fields_are_parsed_by_columns_too() -> None:
    parsed = from_plain(Holder, {"deeps": [*[DEEP] * 100, {}]}).deeps
    assert parsed[0] == Deep(Header(Time(1, 2), "f"), (1, 2, 3), ((0.0, 0.5, 1.0),))
    assert parsed[-1] == Deep()
    assert list(parsed) == [from_plain(Deep, element) for element in [*[DEEP] * 100, {}]]
    cases = [
        (
            {**DEEP, "header": {"stamp": {"nanosec": 10**9}}},
            "data.deeps[60].header.stamp.nanosec: 1000000000 is outside",
        ),
        ({**DEEP, "words": [0] * 65}, "data.deeps[60].words: more than 64 elements"),
        ({**DEEP, "triples": [[0, 0, 2]]}, "data.deeps[60].triples[0][2]: 2.0 is above the maximum 1.0"),
        ({**DEEP, "triples": [[0, 0]]}, "data.deeps[60].triples[0]: expected 3 elements, got 2"),
    ]
    for bad, error in cases:
        with pytest.raises(InvalidArgument) as refused:
            from_plain(Holder, {"deeps": _with([DEEP] * 100, 60, bad)})
        assert refused.value.message.startswith(error), refused.value.message


def test_arrays_of_arrays_are_checked_flattened_and_cut_back() -> None:
    triples = [[0, 0.25, 1]] * 3000
    rows = [[], [1], [1, 2, 3, 4, 5], [-32768, 32767]] * 500
    parsed = from_plain(Holder, {"triples": triples, "rows": rows})
    assert parsed.triples == ((0.0, 0.25, 1.0),) * 3000
    assert all(type(value) is float for value in parsed.triples[-1])
    assert parsed.rows == ((), (1,), (1, 2, 3, 4, 5), (-32768, 32767)) * 500
    cases = [
        ({"triples": _with(triples, AT, [0, 0])}, f"data.triples[{AT}]: expected 3 elements, got 2"),
        ({"triples": _with(triples, AT, [0, 0, 0, 0])}, f"data.triples[{AT}]: expected 3 elements, got 4"),
        ({"triples": _with(triples, AT, [0, -0.5, 0])}, f"data.triples[{AT}][1]: -0.5 is below the minimum 0.0"),
        ({"triples": _with(triples, AT, (0, 0, 0))}, None),  # a tuple is an array too (parsed one by one)
        ({"triples": _with(triples, AT, "abc")}, f"data.triples[{AT}]: expected an array, got str"),
        ({"rows": _with(rows, AT, [0] * 6)}, f"data.rows[{AT}]: more than 5 elements"),
        ({"rows": _with(rows, AT, [0, 40000])}, f"data.rows[{AT}][1]: 40000 is outside [-32768, 32767]"),
        ({"rows": _with(rows, AT, [0, None])}, f"data.rows[{AT}][1]: expected an integer, got null"),
    ]
    for data, error in cases:
        if error is None:
            assert from_plain(Holder, data).triples[AT] == (0.0, 0.0, 0.0)
            continue
        with pytest.raises(InvalidArgument) as refused:
            from_plain(Holder, data)
        assert refused.value.message == error


WIDTHS = [(I8, -128, 127), (U8, 0, 255), (I16, -32768, 32767), (U16, 0, 65535), (I32, -(2**31), 2**31 - 1),
          (U32, 0, 2**32 - 1), (I64, -(2**63), 2**63 - 1), (U64, 0, 2**64 - 1)]  # fmt: skip


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize(("spec", "low", "high"), WIDTHS)
def test_integers_of_every_width_are_checked_at_once_to_their_ends(spec: Int, low: int, high: int) -> None:
    array = Array(spec, max_length=4096)
    values = [low, high, 0, 1] * 1000
    assert array.parse(values, "v") == tuple(values)
    assert array.parse([float(low), 1.0] * 100 + [high], "v")[-3:] == (low, 1, high)  # integral floats
    assert array.parse([Level.HIGH] * 20, "v") == (3,) * 20  # an int subclass: accepted as element-wise
    for bad, error in [
        (high + 1, f"v[2000]: {high + 1} is outside [{low}, {high}]"),
        (low - 1, f"v[2000]: {low - 1} is outside [{low}, {high}]"),
        (2**200, f"v[2000]: {2**200} is outside [{low}, {high}]"),
        (True, "v[2000]: expected an integer, got bool"),
        (0.5, "v[2000]: expected an integer, got float"),
        (float("inf"), "v[2000]: expected an integer, got float"),
        ("1", "v[2000]: expected an integer, got str"),
    ]:
        with pytest.raises(InvalidArgument) as refused:
            array.parse(_with(values, 2000, bad), "v")
        assert refused.value.message == error


@pytest.mark.parametrize(
    ("spec", "bad", "error"),
    [
        (F32, 1e39, "v[2000]: 1e+39 does not fit a float32"),
        (F32, -3.5e38, "v[2000]: -3.5e+38 does not fit a float32"),
        (F32, 10**39, "v[2000]: 1e+39 does not fit a float32"),
        (F64, 10**400, f"v[2000]: {10**400} does not fit a float64"),
        (F64, float("nan"), "v[2000]: must be finite"),
        (F64, float("-inf"), "v[2000]: must be finite"),
        (F64, True, "v[2000]: expected a number, got bool"),
        (F64, None, "v[2000]: expected a number, got null"),
        (F64, "1", "v[2000]: expected a number, got str"),
        (_UNIT, 1.0000001, "v[2000]: 1.0000001 is above the maximum 1.0"),
        (_UNIT, -1e-300, "v[2000]: -1e-300 is below the minimum 0.0"),
    ],
)
def test_floats_are_checked_at_once_to_their_ends(spec: Float, bad: object, error: str) -> None:
    array = Array(spec, max_length=4096)
    values: list[Any] = [0.0, 1, 0.5] * 1000
    assert array.parse(values, "v") == tuple(map(float, values))
    assert [type(value) for value in array.parse(values, "v")[:3]] == [float, float, float]
    with pytest.raises(InvalidArgument) as refused:
        array.parse(_with(values, 2000, bad), "v")
    assert refused.value.message == error


def test_doubles_whose_sum_overflows_are_still_accepted() -> None:
    assert Array(F64, max_length=4096).parse([1.7e308] * 3000, "v") == (1.7e308,) * 3000
    assert Array(F32, max_length=4096).parse([3.4e38, -3.4e38] * 1000, "v")[-1] == -3.4e38


def test_strings_and_booleans_are_checked_at_once() -> None:
    names = ["", "a", "abcd"] * 1000
    assert from_plain(Holder, {"names": names, "flags": [True, False] * 1000}).names == tuple(names)
    for data, error in [
        ({"names": _with(names, AT, "abcde")}, f"data.names[{AT}]: longer than 4 characters"),
        ({"names": _with(names, AT, 1)}, f"data.names[{AT}]: expected a string, got int"),
        ({"flags": [True] * AT + [0]}, f"data.flags[{AT}]: expected a boolean, got int"),
    ]:
        with pytest.raises(InvalidArgument) as refused:
            from_plain(Holder, data)
        assert refused.value.message == error


# -- large payloads in steps -----------------------------------------------------------------


def _steps_work(cls: type[Any], data: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The work (as `work_of` counts it) each step of `from_plain_steps` checks at once."""
    done: list[int] = []
    original = Array.parse_slice

    def counted(self: Array, values: Any, path: str, start: int) -> tuple[Any, ...]:
        done.append(work_of(values, 10**9))
        return original(self, values, path, start)

    monkeypatch.setattr(Array, "parse_slice", counted)
    steps = from_plain_steps(cls, data)
    while True:
        done.clear()
        try:
            next(steps)
        except StopIteration:
            return
        finally:
            yield sum(done)


LOAD_SCRIPT: dict[str, Any] = {"file_name": "a", "constants": [{"name": f"c{i}", "value": i} for i in range(4096)],
               "node_ids": list(range(4096))}  # fmt: skip
NATIVES_SMALL_FIRST = {
    "natives": [{"name": "n"}] + [{"name": "n", "parameters": [{"name": "p", "size": 1}] * 4096}] * 3,
    "variables": [{"name": "v", "size": 1}] * 4096,
}


@pytest.mark.parametrize(
    ("type_name", "data"),
    [
        ("asebaros_msgs/LoadScript", LOAD_SCRIPT),
        ("asebaros_msgs/SetVariable", {"variable": "v", "data": [i % 60000 - 30000 for i in range(32768)]}),
        ("hwgateway/AsebaVMDescription_Response", NATIVES_SMALL_FIRST),  # the first element is no guide
        ("hwgateway/SimOutputs", {"leds": [[0, 0.5, 1]] * 4096}),
    ],
)
def test_large_payloads_are_checked_in_bounded_steps(
    type_name: str, data: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.messages import REGISTRY

    cls = REGISTRY[type_name].cls
    expected = from_plain(cls, data)
    assert run(from_plain_steps(cls, data)) == expected
    steps = list(_steps_work(cls, data, monkeypatch))
    total = work_of(data, 10**9)
    assert max(steps) <= STEP, steps
    assert len(steps) >= total // STEP  # the work was spread, not done in a few big steps
    assert len(steps) <= 4 * total // STEP + 8


@pytest.mark.parametrize(
    ("cls", "data", "error"),
    [
        (LoadScript, {**LOAD_SCRIPT, "constants": _with(LOAD_SCRIPT["constants"], 4000, {"value": 40000})},
         "data.constants[4000].value: 40000 is outside [-32768, 32767]"),
        (LoadScript, {**LOAD_SCRIPT, "node_ids": [*range(4095), -1]}, "data.node_ids[4095]: -1 is outside [0, 65535]"),
        (LoadScript, {**LOAD_SCRIPT, "colour": 1},
         "data: unknown field 'colour' (fields: constants, file_name, node_ids, set_as_default)"),
        (SetVariable, {"variable": "v", "data": [0] * 32767 + ["x"]}, "data.data[32767]: expected an integer, got str"),
        (SetVariable, {"variable": 5, "data": [0] * 32768}, "data.variable: expected a string, got int"),
    ],
)  # fmt: skip
def test_large_payloads_in_steps_are_refused_as_at_once(cls: type[Any], data: dict[str, Any], error: str) -> None:
    with pytest.raises(InvalidArgument) as at_once:
        from_plain(cls, data)
    with pytest.raises(InvalidArgument) as in_steps:
        run(from_plain_steps(cls, data))
    assert at_once.value.message == in_steps.value.message == error


async def test_the_router_lets_the_loop_run_between_the_steps_of_a_large_payload() -> None:
    router = CommandRouter(None, lambda *_: None)  # type: ignore[arg-type]  # validation needs no devices
    turns = 0
    done = False

    async def other_client() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    other = asyncio.create_task(other_client())
    await asyncio.sleep(0)
    loaded = await router._validate(LoadScript, LOAD_SCRIPT)
    bad = {**LOAD_SCRIPT, "node_ids": [*range(4095), -1]}
    with pytest.raises(InvalidArgument, match=r"data\.node_ids\[4095\]: -1 is outside \[0, 65535\]"):
        await router._validate(LoadScript, bad)
    done = True
    await other
    assert loaded == from_plain(LoadScript, LOAD_SCRIPT)
    assert turns >= 2 * (work_of(LOAD_SCRIPT, 10**9) // STEP)  # the other task ran between the steps, both times


# -- at once == one by one, for any data -----------------------------------------------------

_SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 2**63, -(2**63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 0.5, -0.0, 1e39, 3.5e38, float("nan")]),
    st.booleans(),
    st.none(),
    st.text(max_size=6),
)
#: Element specs of every kind, each with a valid element for the long run before the drawn ones.
_ELEMENT_SPECS = [(I8, 1), (U8, 1), (I16, 1), (U64, 1), (Int(16, minimum=-500, maximum=500), 1),
                  (Int(8, choices=(1, 2, 4)), 1), (F64, 1), (F32, 1.0), (_UNIT, 0.5), (Float(64, minimum=-1.0), 1),
                  (BOOL, True), (Str(4), "ab"), (Nested(Flat), FLAT), (Array(I16, max_length=3), [0, 1]),
                  (Array(_UNIT, 2), [0.5, 1])]  # fmt: skip
_FLAT_ELEMENTS = st.one_of(
    st.fixed_dictionaries({}, optional={name: _SCALARS for name in ("count", "word", "ratio", "flag", "label")}),
    st.just(FLAT),
    _SCALARS,
    st.dictionaries(st.sampled_from(["count", "colour"]), _SCALARS, max_size=2),
)


def _outcome(parse: Any) -> tuple[str, Any]:
    try:
        return "ok", parse()
    except InvalidArgument as error:
        return "refused", error.message


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec_and_valid=st.sampled_from(_ELEMENT_SPECS),
    head=st.integers(0, 2100),
    element=st.one_of(_SCALARS, _FLAT_ELEMENTS, st.lists(_SCALARS, max_size=4)),
    tail=st.lists(st.one_of(_SCALARS, _FLAT_ELEMENTS, st.lists(_SCALARS, max_size=4)), max_size=20),
)
def test_checking_at_once_gives_what_parsing_one_by_one_gives(
    spec_and_valid: tuple[Any, Any], head: int, element: Any, tail: list[Any]
) -> None:
    spec, valid = spec_and_valid
    values = [valid] * head + [element] + tail  # a long valid run, then anything
    array = Array(spec, max_length=4096)
    at_once = _outcome(lambda: array.parse(values, "data.v"))
    one_by_one = _outcome(lambda: array._parse_each(values, "data.v", 0))  # the element-wise reference
    assert at_once == one_by_one
    if at_once[0] == "ok":
        assert [type(value) for value in at_once[1]] == [type(value) for value in one_by_one[1]]
