"""The origin rule (`gateway.core.origins`) by itself: each class, look-alikes, the switch and the 403's text.

The same rule on every listener of a running gateway is tests/test_conformance.py's.
"""

from __future__ import annotations

import tomllib

import pytest

from gateway.core.config import ServerConfig
from gateway.core.origins import HOSTED_VIEWERS, OriginClass, classify, origin_allowed, refusal_text

DEFAULTS = ServerConfig()
HOST = "127.0.0.1:8470"


@pytest.mark.parametrize(
    ("origin", "kind"),
    [
        (None, OriginClass.PROGRAM),
        ("http://127.0.0.1:8470", OriginClass.LISTENER),
        ("HTTP://127.0.0.1:8470", OriginClass.LISTENER),
        ("file://", OriginClass.DESKTOP),
        ("http://localhost:5173", OriginClass.LOOPBACK),
        ("http://127.0.0.1:8080", OriginClass.LOOPBACK),
        ("http://127.1.2.3", OriginClass.LOOPBACK),
        ("http://[::1]:3000", OriginClass.LOOPBACK),
        ("https://localhost", OriginClass.LOOPBACK),
        ("https://app.foxglove.dev", OriginClass.VIEWER),
        ("https://lichtblick-suite.github.io", OriginClass.VIEWER),
        ("null", OriginClass.OPAQUE),
        ("http://evil.example", OriginClass.FOREIGN),
        ("http://localhost.evil.example", OriginClass.FOREIGN),
        ("http://127.0.0.1.evil.example", OriginClass.FOREIGN),
        ("http://user@localhost:5173", OriginClass.FOREIGN),
        ("http://localhost:5173/path", OriginClass.FOREIGN),
        ("http://localhost:nope", OriginClass.FOREIGN),
        ("ftp://localhost", OriginClass.FOREIGN),
        ("file://evil.example", OriginClass.FOREIGN),
        ("http://app.foxglove.dev", OriginClass.FOREIGN),
        ("https://app.foxglove.dev.evil.example", OriginClass.FOREIGN),
        ("", OriginClass.FOREIGN),
    ],
)
def test_each_origin_falls_in_its_class(origin: str | None, kind: OriginClass) -> None:
    assert classify(origin, HOST, DEFAULTS, HOSTED_VIEWERS) is kind


def test_the_defaults_admit_programs_own_pages_desktop_loopback_and_viewers_where_spoken() -> None:
    for origin in (None, "http://127.0.0.1:8470", "file://", "http://localhost:5173"):
        assert origin_allowed(origin, HOST, DEFAULTS)
    assert origin_allowed("https://app.foxglove.dev", HOST, DEFAULTS, HOSTED_VIEWERS)
    assert not origin_allowed("https://app.foxglove.dev", HOST, DEFAULTS)  # a listener no viewer speaks
    for origin in ("null", "http://evil.example"):
        assert not origin_allowed(origin, HOST, DEFAULTS, HOSTED_VIEWERS)


def test_the_list_adds_origins_and_default_origins_off_keeps_only_the_list_and_own_pages() -> None:
    listed = ServerConfig(allowed_origins=("https://Lab.example.org", "null"))
    assert origin_allowed("https://lab.example.org", HOST, listed)
    assert origin_allowed("null", HOST, listed)
    strict = ServerConfig(allowed_origins=("https://lab.example.org",), default_origins=False)
    assert origin_allowed("https://lab.example.org", HOST, strict)
    assert origin_allowed("http://127.0.0.1:8470", HOST, strict)
    assert origin_allowed(None, HOST, strict)
    for origin in ("file://", "http://localhost:5173", "https://app.foxglove.dev"):
        assert not origin_allowed(origin, HOST, strict, HOSTED_VIEWERS)
    assert origin_allowed("http://evil.example", HOST, ServerConfig(allowed_origins=("*",)))


@pytest.mark.parametrize(
    ("server", "origin"),
    [
        (DEFAULTS, "https://lab.example.org"),
        (ServerConfig(allowed_origins=("https://a.example",)), "https://lab.example.org"),
        (DEFAULTS, "null"),
        (ServerConfig(default_origins=False), "http://localhost:5173"),
        (DEFAULTS, 'http://x"y\\z\n'),
    ],
)
def test_the_refusal_names_a_server_line_that_admits_the_origin(server: ServerConfig, origin: str) -> None:
    text = refusal_text(origin, server)
    line = next(line for line in text.splitlines() if line.startswith("allowed_origins = "))
    listed = tuple(tomllib.loads(line)["allowed_origins"])
    assert listed == (*server.allowed_origins, origin)
    fixed = ServerConfig(allowed_origins=listed, default_origins=server.default_origins)
    assert origin_allowed(origin, HOST, fixed)


def test_an_origin_too_long_to_be_one_is_refused_without_quoting_it() -> None:
    text = refusal_text("http://" + "x" * 5000, DEFAULTS)
    assert "x" * 300 not in text
    assert "5007 characters" in text
