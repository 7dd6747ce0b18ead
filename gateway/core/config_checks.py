"""Checks across config sections (ports, addresses, TLS files), and the warnings of a valid but risky config.

`gateway.core.config.parse` runs `across_sections` on the sections it could read, so `check-config`
reports what start-up would fail on (a port taken twice, a TLS key that does not load) together
with every other error. `warnings` names what starts but is unsafe; `check-config` and `run` print them.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.errors import ConfigError
from gateway.hostnames import check_host, is_loopback, overlaps

if TYPE_CHECKING:
    from gateway.core.config import Config, ServerConfig


def across_sections(built: dict[str, Any], bad: Set[str]) -> list[ConfigError]:
    """Every problem between keys and sections of the parsed `built` sections.

    `bad` holds the paths already reported: a check involving one of them is skipped, since the
    value it would see is a default, not the file's.
    """
    problems: list[ConfigError] = []

    def clean(*paths: str) -> bool:
        return not any(path in bad for path in paths)

    supervisor, server = built.get("supervisor"), built.get("server")
    if (
        supervisor is not None
        and clean("supervisor.backoff_max_s", "supervisor.backoff_initial_s")
        and supervisor.backoff_max_s < supervisor.backoff_initial_s
    ):
        problems.append(ConfigError("supervisor.backoff_max_s", "must be at least supervisor.backoff_initial_s"))
    if server is not None:
        problems += _server(server, clean)
    tdm = built.get("tdm")
    if tdm is not None and tdm.enabled and tdm.host and clean("tdm.host"):
        try:
            check_host(tdm.host)
        except ValueError as error:
            problems.append(ConfigError("tdm.host", str(error)))
    problems += _port_conflicts(built, clean)
    return problems


def _server(server: ServerConfig, clean: Callable[..., bool]) -> list[ConfigError]:
    problems = []
    if server.host and clean("server.host"):
        try:
            check_host(server.host)
        except ValueError as error:
            problems.append(ConfigError("server.host", str(error)))
    if clean("server.tls_cert", "server.tls_key"):
        if bool(server.tls_cert) != bool(server.tls_key):
            missing = "server.tls_key" if server.tls_cert else "server.tls_cert"
            problems.append(ConfigError(missing, "set both tls_cert and tls_key"))
        elif server.tls_cert:
            problems += _tls_files(server.tls_cert, server.tls_key)
    # (key, the key it is compared with, whether the rule holds, what it must be)
    rules = [
        ("max_frame_bytes", "max_request_bytes", server.max_frame_bytes >= server.max_request_bytes, "at least"),
        ("max_clients_per_peer", "max_clients", server.max_clients_per_peer <= server.max_clients, "at most"),
        ("max_partial_bytes", "max_frame_bytes", server.max_partial_bytes >= server.max_frame_bytes, "at least"),
    ]
    for key, other, holds, bound in rules:
        if not holds and clean(f"server.{key}", f"server.{other}"):
            problems.append(ConfigError(f"server.{key}", f"must be {bound} server.{other}"))
    return problems


def _tls_files(cert: str, key: str) -> list[ConfigError]:
    """Both files readable, and loading as start-up loads them (a key that does not match its certificate)."""
    problems = []
    for name, path in (("tls_cert", cert), ("tls_key", key)):
        try:
            Path(path).read_bytes()
        except OSError as error:
            problems.append(ConfigError(f"server.{name}", f"cannot read {path}: {error.strerror or error}"))
    if problems:
        return problems
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        problems.append(ConfigError("server.tls_cert", f"certificate {cert} with key {key} does not load: {error}"))
    return problems


def _listeners(built: dict[str, Any]) -> Iterator[tuple[str, str, str, int]]:
    """(config path, path of its host, host, port) of every TCP listener the config opens."""
    server, tdm = built.get("server"), built.get("tdm")
    if server is not None:
        yield "server.http_port", "server.host", server.host, server.http_port
        yield "server.msgpack_port", "server.host", server.host, server.msgpack_port
        for section in ("rosbridge", "foxglove"):
            face = built.get(section)
            if face is not None and face.enabled:
                yield f"{section}.port", "server.host", server.host, face.port
    if tdm is not None and tdm.enabled:
        yield "tdm.tcp_port", "tdm.host", tdm.host, tdm.tcp_port
        yield "tdm.ws_port", "tdm.host", tdm.host, tdm.ws_port


def _port_conflicts(built: dict[str, Any], clean: Callable[..., bool]) -> list[ConfigError]:
    """Two listeners on one port of one address: the second could not start (port 0 picks a free one)."""
    taken: list[tuple[str, str, int]] = []
    problems = []
    for path, host_path, host, port in _listeners(built):
        if port <= 0 or not clean(path, host_path):  # 0: a free port; -1: the msgpack listener is off
            continue
        for other_path, other_host, other_port in taken:
            if port == other_port and overlaps(host, other_host):
                problems.append(ConfigError(path, f"port {port} is {other_path} too; give each listener its own port"))
                break
        else:
            taken.append((path, host, port))
    return problems


def warnings(config: Config) -> list[str]:
    """What a valid config does that is unsafe: listeners open to the network with no tokens."""
    found = []
    open_access = not config.auth.all_credentials()
    exposed = [("server.host", config.server.host)]
    if config.tdm.enabled:
        exposed.append(("tdm.host", config.tdm.host))
    for path, host in exposed:
        if open_access and not is_loopback(host):
            plain = "" if path == "tdm.host" or config.server.tls_cert else " in plain text (no TLS)"
            found.append(
                f"{path} = {host!r} admits other machines, and with no [auth] tokens any of them may drive "
                f"every device{plain}: set tokens (hwgateway hash-token --generate) or listen on 127.0.0.1"
            )
    return found
