"""Topic names (`<device_id>/<stream>`) and subscription patterns (`*` one level, `**` any levels)."""

from __future__ import annotations

import re
from functools import lru_cache

from gateway.errors import InvalidArgument

MAX_TOPIC_LENGTH = 256
_SEGMENT = re.compile(r"[A-Za-z0-9_.:\-]+")


def check_device_id(device_id: str) -> str:
    """Return `device_id` if it is one valid topic segment, else raise `ValueError`."""
    if not _SEGMENT.fullmatch(device_id) or len(device_id) > 128:
        raise ValueError(f"device id {device_id!r} must be 1-128 characters of letters, digits and _ . : -")
    return device_id


def check_topic(topic: str) -> str:
    """Return `topic` if it has a device id and at least one stream segment, else raise `ValueError`."""
    segments = topic.split("/")
    if len(topic) > MAX_TOPIC_LENGTH or len(segments) < 2 or not all(_SEGMENT.fullmatch(s) for s in segments):
        raise ValueError(f"topic {topic!r} must be <device_id>/<stream>[/...] of letters, digits and _ . : -")
    return topic


@lru_cache(maxsize=4096)
def parse_pattern(pattern: str) -> tuple[str, ...]:
    """Split and check a subscription pattern; raise `InvalidArgument` naming what is wrong."""
    if not pattern or len(pattern) > MAX_TOPIC_LENGTH:
        raise InvalidArgument(f"pattern {pattern!r} must be 1-{MAX_TOPIC_LENGTH} characters")
    segments = tuple(pattern.split("/"))
    for segment in segments:
        if segment not in ("*", "**") and not _SEGMENT.fullmatch(segment):
            raise InvalidArgument(
                f"pattern {pattern!r}: segment {segment!r} must be '*', '**' or letters, digits and _ . : -"
            )
    return segments


def _match(pattern: tuple[str, ...], segments: tuple[str, ...]) -> bool:
    if not pattern:
        return not segments
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, segments[skip:]) for skip in range(len(segments) + 1))
    if not segments or (head != "*" and head != segments[0]):
        return False
    return _match(rest, segments[1:])


def matches(pattern: str, topic: str) -> bool:
    """True when `topic` matches `pattern` (`*` is exactly one segment, `**` zero or more)."""
    return _match(parse_pattern(pattern), tuple(topic.split("/")))
