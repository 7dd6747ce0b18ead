"""Message constructors: the slot-setting `__init__` behaves exactly as the frozen dataclass's own."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Annotated, Any

import pytest

from gateway.messages import REGISTRY
from gateway.messages.common import Time
from gateway.messages.creos import ControllerState
from gateway.messages.schema import F64, Array, Nested, Spec, info_of, structure


def _nested_classes(spec: Spec) -> list[type[Any]]:
    if isinstance(spec, Nested):
        return [spec.cls]
    if isinstance(spec, Array):
        return _nested_classes(spec.item)
    return []


def _every_message_class() -> list[type[Any]]:
    """Every registered class and every structure nested in one, each once."""
    seen: dict[type[Any], None] = {}
    pending = [info.cls for info in REGISTRY.values()]
    while pending:
        cls = pending.pop()
        if cls not in seen:
            seen[cls] = None
            for _, spec in info_of(cls).fields:
                pending.extend(_nested_classes(spec))
    return sorted(seen, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


CLASSES = _every_message_class()


def test_every_plain_message_class_gets_the_slot_setting_init() -> None:
    plain = [cls for cls in CLASSES if info_of(cls).plain_init]
    assert len(plain) > 90  # the registry and its structures
    for cls in plain:
        if dataclasses.fields(cls):
            assert "_set0" in cls.__init__.__globals__, cls  # not the dataclass's own


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_the_init_has_the_fields_signature_and_sets_every_field(cls: type[Any]) -> None:
    fields = dataclasses.fields(cls)
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters] == [f.name for f in fields]
    for parameter, field in zip(parameters, fields, strict=True):
        assert parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert parameter.default is (inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default)
        assert parameter.annotation == field.type
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    defaults = cls()
    # Positional and keyword arguments land in the same fields; `replace` builds through the same init.
    values = [getattr(defaults, f.name) for f in fields]
    assert cls(*values) == defaults == cls(**{f.name: v for f, v in zip(fields, values, strict=True)})
    assert dataclasses.replace(defaults) == defaults


def test_the_init_refuses_what_the_dataclass_refuses_and_the_instance_stays_frozen() -> None:
    with pytest.raises(TypeError, match="positional"):
        Time(1, 2, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'seconds'"):
        Time(seconds=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values"):
        Time(1, sec=1)  # type: ignore[misc]
    stamp = Time(5, nanosec=7)
    assert (stamp.sec, stamp.nanosec) == (5, 7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stamp.sec = 6  # type: ignore[misc]
    assert hash(stamp) == hash(Time(5, 7))


def test_a_required_field_stays_required() -> None:
    @structure
    class Pair:
        a: Annotated[float, F64]
        b: Annotated[float, F64] = 2.0

    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        Pair()  # type: ignore[call-arg]
    assert (Pair(1.0).a, Pair(1.0).b) == (1.0, 2.0)
    assert "_set0" in Pair.__init__.__globals__


def test_a_field_with_a_factory_keeps_the_dataclasss_init() -> None:
    @structure
    class Bag:
        items: Annotated[tuple[float, ...], Array(F64)] = dataclasses.field(default_factory=tuple)

    assert "_set0" not in Bag.__init__.__globals__
    assert Bag().items == ()
    assert Bag((1.0,)).items == (1.0,)


def test_a_nested_message_copies_pickles_and_replaces_as_before() -> None:
    state = ControllerState(Time(1, 500_000_000), (0.5, -0.5), (1, 0))
    assert copy.copy(state) == state == copy.deepcopy(state) == pickle.loads(pickle.dumps(state))
    assert dataclasses.replace(state, axes=(0.0,)) == ControllerState(Time(1, 500_000_000), (0.0,), (1, 0))
    assert dataclasses.asdict(state)["timestamp"] == {"sec": 1, "nanosec": 500_000_000}
