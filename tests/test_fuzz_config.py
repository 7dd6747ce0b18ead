"""Fuzzing the configuration: any document of known sections and keys gets a config or one ConfigError, never a crash.

`hwgateway check-config`, the daemon's start and a reload all read the file through `config.parse`;
a value of any type under any known key (a device's options too) must come back as a problem named
by its path, whatever the rest of the file holds.
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devices.registry import KINDS
from gateway.config import EXTENSIONS
from gateway.core.config import Config, parse
from gateway.errors import ConfigError
from tests.fuzzing import fuzz_settings, nested

pytestmark = pytest.mark.fuzz

#: Every section's keys (a section's own dataclass fields), and a few that are not keys.
SECTION_KEYS = {
    name: [field.name for field in dataclasses.fields(hint)] + ["nope"]
    for name, hint in get_type_hints(Config).items()
    if isinstance(hint, type) and dataclasses.is_dataclass(hint)
}
SECTION_NAMES = list(get_type_hints(Config))
OPTION_KEYS = sorted(
    {"id", "kind", "enabled", "ros_namespace"}
    | {option.name for kind in KINDS.kinds() for option in dataclasses.fields(KINDS.options_class(kind))}
)
scalars = (
    st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["127.0.0.1", "0.0.0.0", "/tmp/x.sock", "sim", "*", "", "info", "json"])
)
values = nested(scalars)  # TOML has no null


def _section(name: str) -> st.SearchStrategy[Any]:
    if name == "devices":
        device = st.dictionaries(st.sampled_from(OPTION_KEYS), values, max_size=5).map(
            lambda table: {"kind": "sim", **table}
        ) | st.fixed_dictionaries({"kind": st.sampled_from([*KINDS.kinds(), "nope"])})
        return st.dictionaries(st.sampled_from(["sim-1", "pad", "a b", ""]), device | values, max_size=3)
    keys = SECTION_KEYS.get(name)
    if keys is None:
        return values
    return st.dictionaries(st.sampled_from(keys), values, max_size=5) | values


documents = st.lists(st.sampled_from([*SECTION_NAMES, "nope"]), unique=True, max_size=4).flatmap(
    lambda names: st.fixed_dictionaries({name: _section(name) for name in names})
)


@given(documents)
@fuzz_settings(300)
def test_any_document_gets_a_config_or_named_problems(document: dict[str, Any]) -> None:
    try:
        config = parse(document, EXTENSIONS)
    except ConfigError as error:
        problems = error.errors
    else:
        assert isinstance(config, Config)
        return
    assert all(problem.message for problem in problems), document
    assert all(problem.path.split(".")[0] in (*SECTION_NAMES, "nope", "") for problem in problems), problems
