from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.errors import InvalidArgument
from gateway.topics import (
    MAX_NAME_SEGMENT,
    MAX_TOPIC_LENGTH,
    Pattern,
    check_device_id,
    check_topic,
    matches,
    name_segment,
    parse_pattern,
    segment_name,
)

#: The longest topic an Aseba event can have: the longest device id, the largest node id.
_LONGEST_EVENT_TOPIC = "d" * 128 + "/node/65535/events/{}"


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


def test_a_pattern_subscribed_again_is_not_parsed_again_and_a_bad_one_is_refused_each_time() -> None:
    parsed = Pattern.parse("dev-1/*/state")
    assert Pattern.parse("dev-1/*/state") is parsed
    assert (parsed.first, parsed.last, parsed.fixed, parsed.globstar, parsed.literal) == (
        "dev-1",
        "state",
        3,
        False,
        False,
    )
    assert Pattern.parse("dev-1/state").literal
    for _ in range(2):  # a refusal is not cached: the second is refused as the first
        with pytest.raises(InvalidArgument, match="segment"):
            Pattern.parse("dev 1/*")


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


def _reference_match(pattern: tuple[str, ...], segments: tuple[str, ...]) -> bool:
    """The plain recursive definition (exponential, so only for small cases)."""
    if not pattern:
        return not segments
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_reference_match(rest, segments[skip:]) for skip in range(len(segments) + 1))
    if not segments or (head != "*" and head != segments[0]):
        return False
    return _reference_match(rest, segments[1:])


@given(
    st.lists(st.sampled_from(["a", "b", "*", "**"]), min_size=1, max_size=7),
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=7),
)
def test_matching_agrees_with_the_recursive_definition(pattern: list[str], topic: list[str]) -> None:
    text = "/".join(pattern)
    if text.count("**") - text.count("**/**") > 4:
        return
    assert matches(text, "/".join(topic)) is _reference_match(tuple(pattern), tuple(topic))


#: The costliest patterns the limits allow (what each match costs is `bench/loop_budgets.py`'s subject).
WORST = ["/".join(["**"] * 84 + ["zz"]), "**/a/**/b/**/c/**/zz", "/".join(["*"] * 31 + ["**"])]


def test_consecutive_globstars_are_merged_and_the_worst_legal_patterns_match_rightly() -> None:
    assert parse_pattern("**/**/**/zz") == ("**", "zz")
    assert parse_pattern(WORST[0]) == ("**", "zz")
    topics = ["/".join(["a"] * 4 + ["b" * 200]), "a/b/c/zz", "a/x/b/y/c/z/zz", "/".join(["a"] * 31)]
    for pattern in WORST:
        assert len(pattern) <= MAX_TOPIC_LENGTH
        merged = parse_pattern(pattern)  # at most 4 '**' once merged: the plain definition stays small
        for topic in topics:
            expected = _reference_match(merged, tuple(topic.split("/")))
            assert matches(pattern, topic) is expected, (pattern, topic)
    assert [matches(pattern, "a/b/c/zz") for pattern in WORST] == [True, True, False]
    assert matches(WORST[2], "/".join(["a"] * 31)) is True


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [("/".join(["a"] * 33), "more than 32 segments"), ("**/a/**/a/**/a/**/a/**/a", "more than 4 '\\*\\*'")],
)
def test_pattern_complexity_is_bounded(pattern: str, reason: str) -> None:
    with pytest.raises(InvalidArgument, match=reason):
        parse_pattern(pattern)


@pytest.mark.parametrize(
    ("name", "segment"),
    [
        ("ping", "ping"),
        ("motor.left", "motor.left"),
        ("émoi", "-e9-moi"),
        ("a b", "a-20-b"),
        ("a-b:c/d", "a-2d-b-3a-c-2f-d"),
        ("数", "-6570-"),
        ("🤖", "-1f916-"),
    ],
)
def test_a_name_is_one_segment_by_one_reversible_rule(name: str, segment: str) -> None:
    assert name_segment(name) == segment
    assert segment_name(segment) == name
    assert check_topic(_LONGEST_EVENT_TOPIC.format(segment))


@settings(max_examples=60)
@given(st.text(min_size=1, max_size=300))
def test_every_name_is_a_legal_segment_and_distinct_names_stay_distinct(name: str) -> None:
    segment = name_segment(name)
    assert len(segment) <= MAX_NAME_SEGMENT
    assert check_topic(_LONGEST_EVENT_TOPIC.format(segment))
    if ":" not in segment:
        assert segment_name(segment) == name
    assert name_segment(name + "x") != segment


def test_a_name_too_long_for_a_topic_keeps_its_start_and_a_digest() -> None:
    long = "e" * 300
    segment = name_segment(long)
    assert len(segment) == MAX_NAME_SEGMENT
    assert segment.startswith("e" * 79 + ":")
    assert name_segment("e" * 299 + "f") != segment
    assert segment_name(segment) == segment  # not reversible: the TDM face looks the name up
    escaped = name_segment("é" * 100)  # cut between escapes, never inside one
    assert escaped.split(":")[0] == "-e9-" * 19


def test_an_empty_name_has_no_segment() -> None:
    with pytest.raises(ValueError, match="empty"):
        name_segment("")
