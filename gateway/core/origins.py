"""Which web pages may open a WebSocket on a listener: one rule for every face.

A browser names the page that opens a WebSocket in its `Origin` header, and cannot lie about it; a
client that is no browser (roslibpy, tdmclient, the CLI) sends none, and no web page can drive it.
A page the user merely visits must never reach the robots, so a fresh install accepts only pages
that are the user's own or a viewer's (`OriginClass`), and refuses every other site with a 403 whose
text is the one config line that would let it in (`refusal_text`).

Accepted with the shipped defaults (`server.default_origins = true`), on every listener:

- no Origin at all: a program, not a page;
- the listener's own pages (the Origin names the host and port the request came to): the dashboard;
- `file://`: a page loaded from a file by a desktop app (Electron sends `file://`; the Foxglove and
  Lichtblick desktop apps load theirs so);
- loopback pages (`http(s)://localhost`, `127.0.0.0/8`, `[::1]`, any port): a development server on
  the browser's own machine, whose programs could connect without a browser anyway.

Accepted only on the listeners whose protocol they speak (Foxglove and rosbridge: the face passes
`HOSTED_VIEWERS`): the official hosted viewer apps.

Refused unless listed in `server.allowed_origins`: every other site, and `null`, which any site can
send from a sandboxed frame (browsers send it for a page opened from a file too: serve such a page
from a loopback port instead). `allowed_origins` adds origins; `"*"` admits every page.
`default_origins = false` keeps only the listener's own pages, programs and that list.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Collection
from urllib.parse import urlsplit

from gateway.core.config import ServerConfig

#: The official hosted web apps that speak the Foxglove WebSocket and rosbridge protocols, as the
#: browser names them: Foxglove's app, and Lichtblick's build on GitHub Pages
#: (https://lichtblick-suite.github.io/lichtblick/).
HOSTED_VIEWERS = ("https://app.foxglove.dev", "https://lichtblick-suite.github.io")

#: What Electron sends for a page loaded from a file (Chromium itself sends `null`).
FILE_ORIGIN = "file://"

#: The longest Origin quoted back in a refusal; a longer one is no origin a browser sends.
_MAX_QUOTED = 200


class OriginClass(enum.Enum):
    """What kind of page an `Origin` header names, as far as the origin rule cares."""

    PROGRAM = "no Origin: not a browser"
    LISTENER = "a page this listener served"
    DESKTOP = "a desktop app's page (file://)"
    LOOPBACK = "a page from a loopback address (a development server)"
    VIEWER = "an official hosted viewer"
    CONFIGURED = "listed in server.allowed_origins"
    OPAQUE = "null: a sandboxed frame or a file opened in a browser"
    FOREIGN = "another site"


#: The classes a fresh install accepts (with `default_origins`); a listener adds VIEWER when it passes viewers.
DEFAULT_CLASSES = frozenset({OriginClass.PROGRAM, OriginClass.LISTENER, OriginClass.DESKTOP, OriginClass.LOOPBACK})


def _is_loopback_page(origin: str) -> bool:
    """True for `http(s)://` + localhost, a 127.0.0.0/8 address or [::1], with any port or none."""
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 - raises ValueError on a port that is no number
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment or parts.username:
        return False
    host = parts.hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def classify(origin: str | None, request_host: str, server: ServerConfig, viewers: Collection[str] = ()) -> OriginClass:
    """The class of the page `origin` names, for a request that came to `request_host` (its `Host`).

    `viewers` are the hosted viewer origins this listener speaks to (`HOSTED_VIEWERS` or none). The
    first class that fits wins: an origin listed in `allowed_origins` is CONFIGURED (admitted even
    with `default_origins` off) unless it is the listener's own.
    """
    if origin is None:
        return OriginClass.PROGRAM
    lowered = origin.strip().lower()
    if lowered == f"http://{request_host}".lower() or lowered == f"https://{request_host}".lower():
        return OriginClass.LISTENER
    if "*" in server.allowed_origins or lowered in {listed.strip().lower() for listed in server.allowed_origins}:
        return OriginClass.CONFIGURED
    if lowered == FILE_ORIGIN:
        return OriginClass.DESKTOP
    if _is_loopback_page(lowered):
        return OriginClass.LOOPBACK
    if lowered in viewers:
        return OriginClass.VIEWER
    if lowered == "null":
        return OriginClass.OPAQUE
    return OriginClass.FOREIGN


def accepted(kind: OriginClass, server: ServerConfig) -> bool:
    """True when a listener accepts a page of class `kind` under `server`'s settings."""
    if kind in (OriginClass.PROGRAM, OriginClass.LISTENER, OriginClass.CONFIGURED):
        return True
    if kind in (OriginClass.DESKTOP, OriginClass.LOOPBACK, OriginClass.VIEWER):
        return server.default_origins
    return False


def origin_allowed(origin: str | None, request_host: str, server: ServerConfig, viewers: Collection[str] = ()) -> bool:
    """True when a WebSocket upgrade with this `Origin` (None: no header) may go on (see the module's rule)."""
    return accepted(classify(origin, request_host, server, viewers), server)


def _toml_string(text: str) -> str:
    """`text` as a TOML basic string (quotes, backslashes and control characters escaped)."""
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def refusal_text(origin: str, server: ServerConfig) -> str:
    """The 403's body for a refused `origin`: why, and the exact `[server]` line that would admit it."""
    if len(origin) > _MAX_QUOTED:
        return f"origin refused: an Origin header of {len(origin)} characters is no web origin\n"
    kind = classify(origin, "", server)
    line = "allowed_origins = [" + ", ".join(_toml_string(o) for o in (*server.allowed_origins, origin)) + "]"
    why = f"origin {_toml_string(origin)} refused ({kind.value})"
    if kind is OriginClass.OPAQUE:
        hint = (
            "any web site can send null from a sandboxed frame; serve your page from a loopback port "
            "(python3 -m http.server) instead, or, to accept every such page, add under [server] in the "
            f"gateway's config file:\n{line}\n"
        )
    elif kind in (OriginClass.DESKTOP, OriginClass.LOOPBACK):
        hint = f"default_origins is off; add under [server] in the gateway's config file:\n{line}\n"
    else:
        hint = f"to let that site's pages drive the gateway, add under [server] in its config file:\n{line}\n"
    return f"{why}; {hint}"
