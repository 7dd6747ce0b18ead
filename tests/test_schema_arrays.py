"""Long arrays: the fast validation paths accept what the element-wise rules accept, and name the bad element."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

from gateway.errors import InvalidArgument
from gateway.messages.asebaros import LoadScript, SetVariable
from gateway.messages.schema import (
    F32,
    I16,
    LARGE_PAYLOAD_ELEMENTS,
    Array,
    Float,
    Int,
    from_plain,
    is_large,
    structure,
    work_of,
)


@structure  # not registered: the bus and its schemas do not see it
class Numbers:
    """Arrays of each number spec the fast paths handle, and one they leave alone."""

    words: Annotated[tuple[int, ...], Array(I16, max_length=32768)] = ()
    small: Annotated[tuple[int, ...], Array(Int(8, minimum=-3, maximum=3), max_length=32768)] = ()
    picks: Annotated[tuple[int, ...], Array(Int(8, choices=(1, 2, 4)), max_length=32768)] = ()
    floats: Annotated[tuple[float, ...], Array(F32, max_length=32768)] = ()
    ratios: Annotated[tuple[float, ...], Array(Float(64, 0.0, 1.0), max_length=32768)] = ()


LONG = 32768


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"words": [*range(-16384, 16384)]}, ("words", tuple(range(-16384, 16384)))),
        ({"words": [1, 2.0, 3]}, ("words", (1, 2, 3))),  # an integral float is an integer, as element-wise
        ({"words": [1, 2.0] * 16384}, ("words", (1, 2) * 16384)),
        ({"floats": [0, 1.5, -2] * 1000}, ("floats", (0.0, 1.5, -2.0) * 1000)),
        ({"ratios": [0, 0.5, 1]}, ("ratios", (0.0, 0.5, 1.0))),
        ({"picks": [1, 2, 4, 4]}, ("picks", (1, 2, 4, 4))),
        ({"words": []}, ("words", ())),
    ],
)
def test_valid_arrays_give_the_values_element_wise_validation_gives(
    data: dict[str, Any], expected: tuple[str, tuple[Any, ...]]
) -> None:
    parsed = from_plain(Numbers, data)
    name, values = expected
    assert getattr(parsed, name) == values
    assert [type(v) for v in getattr(parsed, name)] == [type(v) for v in values]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"words": [0] * (LONG - 1) + [40000]}, f"data.words[{LONG - 1}]: 40000 is outside [-32768, 32767]"),
        ({"words": [0, 5, -40000, 40000]}, "data.words[2]: -40000 is outside [-32768, 32767]"),
        ({"words": [0] * 100 + ["7"]}, "data.words[100]: expected an integer, got str"),
        ({"words": [0, True]}, "data.words[1]: expected an integer, got bool"),
        ({"words": [0, 1.5]}, "data.words[1]: expected an integer, got float"),
        ({"small": [0, 3, 4]}, "data.small[2]: 4 is outside [-3, 3]"),
        ({"picks": [1, 3]}, "data.picks[1]: 3 is not one of [1, 2, 4]"),
        ({"floats": [0.0] * 10 + [float("nan")]}, "data.floats[10]: must be finite"),
        ({"floats": [0.0, float("inf"), float("-inf")]}, "data.floats[1]: must be finite"),
        ({"floats": [0.0, 1e39]}, "data.floats[1]: 1e+39 does not fit a float32"),
        ({"floats": [0.0, 10**400]}, f"data.floats[1]: {10**400} does not fit a float32"),
        ({"floats": [1e308, 1e308]}, "data.floats[0]: 1e+308 does not fit a float32"),
        ({"ratios": [0.5, 1.5]}, "data.ratios[1]: 1.5 is above the maximum 1.0"),
        ({"ratios": [0.5, None]}, "data.ratios[1]: expected a number, got null"),
        ({"words": [0] * (LONG - 1) + ["x"]}, f"data.words[{LONG - 1}]: expected an integer, got str"),
        ({"words": [0, 40000, "x"]}, "data.words[1]: 40000 is outside [-32768, 32767]"),
        ({"words": [0, 1.5, "x"]}, "data.words[1]: expected an integer, got float"),
        ({"words": [0, 2.0, float("nan")]}, "data.words[2]: expected an integer, got float"),
        ({"floats": [0, True]}, "data.floats[1]: expected a number, got bool"),
        ({"picks": [1, 2, "x"]}, "data.picks[2]: expected an integer, got str"),
        ({"words": [0] * (LONG + 1)}, "data.words: more than 32768 elements"),
    ],
)
def test_a_bad_element_is_refused_with_its_path(data: dict[str, Any], error: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        from_plain(Numbers, data)
    assert refused.value.message == error


def test_nested_messages_in_long_arrays_are_checked_with_their_paths() -> None:
    constants = [{"name": f"c{i}", "value": i} for i in range(4096)]
    loaded = from_plain(LoadScript, {"file_name": "a.aesl", "constants": constants})
    assert loaded.constants[4095].name == "c4095"
    assert loaded.constants[4095].value == 4095
    cases = [
        ({"name": "x", "value": 40000}, "data.constants[4095].value: 40000 is outside [-32768, 32767]"),
        ({"name": "x", "valu": 1}, "data.constants[4095]: unknown field 'valu' (fields: name, value)"),
        (7, "data.constants[4095]: expected an object, got int"),
    ]
    for bad, error in cases:
        with pytest.raises(InvalidArgument) as refused:
            from_plain(LoadScript, {"constants": [*constants[:4095], bad]})
        assert refused.value.message == error
    with pytest.raises(InvalidArgument) as refused:
        from_plain(SetVariable, {"variable": "v", "data": [0, "x"]})
    assert refused.value.message == "data.data[1]: expected an integer, got str"


def test_large_payloads_are_told_apart_cheaply() -> None:
    # A map counts 1 and 1 per entry, an array 1 and 1/8 per element: 8000 numbers are checked at once.
    assert work_of({"data": [0] * 8000}) == 2 + 1 + 1000
    assert not is_large({"data": [0] * 8000})
    assert is_large({"data": [0] * 32768})
    assert work_of({"constants": [{"name": "c", "value": 1}] * 300}) == 2 + 1 + 37 + 300 * 3
    assert not is_large({"constants": [{"name": "c", "value": 1}] * 300})
    assert is_large({"constants": [{"name": "c", "value": 1}] * 400})
    assert is_large({"nested": [[0]] * (LARGE_PAYLOAD_ELEMENTS + 1)})
    assert not is_large({"a": 1, "b": "x" * 100_000})
    assert not is_large(None)
    assert work_of({"data": [0] * 10**6}, budget=10) == 2 + 1 + 10**6 // 8  # counted before looked at
