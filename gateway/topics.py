"""Topic names (`<device_id>/<stream>`) and subscription patterns (`*` one level, `**` any levels)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
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


#: Longest segment `name_segment` writes (characters). A topic holds a device id (128 at most), a
#: few short fixed segments and one name: 96 keeps `<device>/node/<65535>/events/<name>` within
#: MAX_TOPIC_LENGTH.
MAX_NAME_SEGMENT = 96
#: Characters a name keeps as they are in its segment; every other one is escaped.
_PLAIN = re.compile(r"[A-Za-z0-9_.]")
_ESCAPE = re.compile(r"-([0-9a-f]{1,6})-")
#: Hex digits of the SHA-256 of a name too long for one segment, after its cut-down escaped text.
_DIGEST_HEX = 16


@lru_cache(maxsize=4096)  # on every Aseba event: the few names of the loaded programs
def name_segment(name: str) -> str:
    """The topic segment that carries `name` (any non-empty text: an Aseba event name, say).

    One rule: ASCII letters and digits, `_` and `.` stand for themselves; every other character
    becomes `-`, its Unicode code point in lowercase hex, `-` (`émoi` -> `-e9-moi`,
    `a b` -> `a-20-b`). Names no longer than MAX_NAME_SEGMENT once escaped come back unchanged
    from `segment_name`. A longer one keeps its first escaped characters (never half an escape)
    and ends in `:` and 16 hex digits of the SHA-256 of its UTF-8 text, MAX_NAME_SEGMENT at most:
    distinct names still give distinct segments, and `:` appears in no other segment this writes.
    Raises ValueError for an empty name (no segment can be empty).
    """
    if not name:
        raise ValueError("an empty name has no topic segment")
    pieces = [c if _PLAIN.fullmatch(c) else f"-{ord(c):x}-" for c in name]
    escaped = "".join(pieces)
    if len(escaped) <= MAX_NAME_SEGMENT:
        return escaped
    room = MAX_NAME_SEGMENT - 1 - _DIGEST_HEX
    kept: list[str] = []
    used = 0
    for piece in pieces:
        if used + len(piece) > room:
            break
        kept.append(piece)
        used += len(piece)
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_HEX]
    return f"{''.join(kept)}:{digest}"


def segment_name(segment: str) -> str:
    """The name `name_segment` wrote as `segment`; a long name's segment (ending in `:<digest>`) as it is.

    A segment with no escapes is its own name, so topics named before the rule read the same.
    """
    if ":" in segment:
        return segment
    return _ESCAPE.sub(_unescape, segment)


def _unescape(match: re.Match[str]) -> str:
    code = int(match.group(1), 16)
    return chr(code) if code <= 0x10FFFF else match.group(0)  # not written by name_segment: left as it is


#: Segments of one pattern, and `**` wildcards in it once consecutive ones are merged.
MAX_PATTERN_SEGMENTS = 32
MAX_GLOBSTARS = 4


@lru_cache(maxsize=4096)
def parse_pattern(pattern: str) -> tuple[str, ...]:
    """Split, check and normalise a subscription pattern; raise `InvalidArgument` naming what is wrong.

    Consecutive `**` segments mean the same as one and are merged; what is left may have at most
    `MAX_PATTERN_SEGMENTS` segments, of which at most `MAX_GLOBSTARS` are `**`.
    """
    if not pattern or len(pattern) > MAX_TOPIC_LENGTH:
        raise InvalidArgument(f"pattern {pattern!r} must be 1-{MAX_TOPIC_LENGTH} characters")
    segments: list[str] = []
    for segment in pattern.split("/"):
        if segment not in ("*", "**") and not _SEGMENT.fullmatch(segment):
            raise InvalidArgument(
                f"pattern {pattern!r}: segment {segment!r} must be '*', '**' or letters, digits and _ . : -"
            )
        if segment == "**" and segments and segments[-1] == "**":
            continue
        segments.append(segment)
    if len(segments) > MAX_PATTERN_SEGMENTS:
        raise InvalidArgument(f"pattern {pattern[:64]!r}...: more than {MAX_PATTERN_SEGMENTS} segments")
    if segments.count("**") > MAX_GLOBSTARS:
        raise InvalidArgument(f"pattern {pattern[:64]!r}...: more than {MAX_GLOBSTARS} '**' segments")
    return tuple(segments)


def _match(pattern: tuple[str, ...], segments: list[str]) -> bool:
    """Glob matching over segments in O(len(pattern) x len(segments)), without recursion.

    `**` is retried at ever later segments only from the last `**` seen: an earlier one can never do
    better, which is what keeps this linear in practice and quadratic at worst.
    """
    p = s = 0
    star_p, star_s = -1, 0
    while s < len(segments):
        if p < len(pattern) and pattern[p] == "**":
            star_p, star_s = p, s
            p += 1
        elif p < len(pattern) and (pattern[p] == "*" or pattern[p] == segments[s]):
            p += 1
            s += 1
        elif star_p >= 0:
            star_s += 1
            p, s = star_p + 1, star_s
        else:
            return False
    while p < len(pattern) and pattern[p] == "**":
        p += 1
    return p == len(pattern)


@dataclass(frozen=True, slots=True)
class Pattern:
    """A checked subscription pattern, parsed once, with what rules most topics out at once.

    A subscription keeps its patterns in this form, so matching a topic never parses a pattern
    again (a cache of parsed patterns thrashes once clients hold more distinct patterns than it has
    slots, and routing then cost about 15x more).
    """

    text: str
    segments: tuple[str, ...]
    #: The fewest topic segments it can match (its segments other than `**`).
    fixed: int
    globstar: bool
    #: Its first and last segment when they are literal (None: a wildcard).
    first: str | None
    last: str | None
    #: True when it has no wildcard: it matches the one topic spelled as it is.
    literal: bool

    @staticmethod
    def parse(pattern: str) -> Pattern:
        """Check and parse `pattern`; raise `InvalidArgument` naming what is wrong.

        Patterns are immutable, so one parsed pattern is shared: a client that subscribes to the same
        patterns again (a dashboard's churn) parses none again. Once clients hold more distinct
        patterns than the cache has slots, a subscribe parses its own again, as it would uncached;
        matching never parses.
        """
        return _parsed(pattern)

    def matches_parts(self, parts: list[str]) -> bool:
        """True when the topic split into `parts` matches this pattern."""
        count = len(parts)
        if count < self.fixed or (not self.globstar and count != self.fixed):
            return False
        if (self.first is not None and parts[0] != self.first) or (self.last is not None and parts[-1] != self.last):
            return False
        if self.globstar:
            return _match(self.segments, parts)
        # As many parts as segments (`fixed` counted above): each part is its segment or any under `*`.
        # A loop, not `all` over a generator: 400 against 630 ns a match here.
        for segment, part in zip(self.segments, parts, strict=True):  # noqa: SIM110
            if segment != part and segment != "*":
                return False
        return True


@lru_cache(maxsize=4096)
def _parsed(pattern: str) -> Pattern:
    segments = parse_pattern(pattern)
    return Pattern(
        pattern,
        segments,
        sum(1 for segment in segments if segment != "**"),
        "**" in segments,
        segments[0] if segments[0] not in ("*", "**") else None,
        segments[-1] if segments[-1] not in ("*", "**") else None,
        "*" not in segments and "**" not in segments,
    )


def parse_patterns(patterns: tuple[str, ...]) -> tuple[Pattern, ...]:
    """Check and parse every pattern of a subscription (`InvalidArgument` on the first bad one)."""
    # `map` over the cache itself: no Python frame per pattern (a churning client sends 64 each time).
    return tuple(map(_parsed, patterns))


def matches(pattern: str, topic: str) -> bool:
    """True when `topic` matches `pattern` (`*` is exactly one segment, `**` zero or more)."""
    return Pattern.parse(pattern).matches_parts(topic.split("/"))


def matches_any(patterns: tuple[str, ...], topic: str) -> bool:
    """True when `topic` matches one of `patterns` (each parsed now: for occasional use)."""
    return matches_parsed(parse_patterns(patterns), topic)


def matches_parsed(patterns: tuple[Pattern, ...], topic: str) -> bool:
    """True when `topic` matches one of the parsed `patterns` (the topic is split once for all of them)."""
    parts = topic.split("/")
    return any(pattern.matches_parts(parts) for pattern in patterns)
