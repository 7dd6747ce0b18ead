from __future__ import annotations

import pytest

from gateway.errors import InvalidArgument
from gateway.topics import check_device_id, check_topic, matches


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("thymio-1/state", "thymio-1/state", True),
        ("thymio-1/state", "thymio-1/states", False),
        ("thymio-1/*", "thymio-1/state", True),
        ("thymio-1/*", "thymio-1/events/button", False),
        ("thymio-1/**", "thymio-1/events/button", True),
        ("thymio-1/**", "thymio-1/state", True),
        ("*/state", "wiimote-00:1f:32:aa:bb:cc/state", True),
        ("*/state", "thymio-1/events/state", False),
        ("**/button", "thymio-1/events/button", True),
        ("**", "a/b/c", True),
        ("thymio-1/**/button", "thymio-1/button", True),
        ("thymio-1/**/button", "thymio-1/x/y/button", True),
        ("thymio-2/**", "thymio-1/state", False),
    ],
)
def test_pattern_matching(pattern: str, topic: str, expected: bool) -> None:
    assert matches(pattern, topic) is expected


@pytest.mark.parametrize("pattern", ["", "a//b", "thymio*/state", "a/b c", "x" * 300])
def test_bad_patterns_are_refused_with_the_reason(pattern: str) -> None:
    with pytest.raises(InvalidArgument, match="pattern"):
        matches(pattern, "a/b")


def test_topic_and_device_id_rules() -> None:
    assert check_topic("sim-1/state") == "sim-1/state"
    for bad in ("state", "sim-1/", "sim 1/state", "a/*"):
        with pytest.raises(ValueError, match="topic"):
            check_topic(bad)
    assert check_device_id("wiimote-00:1f:32:aa:bb:cc")
    with pytest.raises(ValueError, match="device id"):
        check_device_id("a/b")


def test_a_trailing_newline_is_not_a_name() -> None:
    with pytest.raises(ValueError, match="device id"):
        check_device_id("sim\n")
    with pytest.raises(InvalidArgument):
        matches("sim-1/state\n", "sim-1/state")
