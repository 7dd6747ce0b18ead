"""The configuration file (TOML) read into frozen dataclasses; every error names its TOML path.

The core reads every section; what it does not know itself comes in `Extensions`, which the
composition root (`gateway.config`) passes: the device kinds (`[devices.<id>] kind` and its options)
and the checks a face makes of its own keys (the rosbridge face's `ros_namespace`).

Layout::

    [server]      listen addresses, limits
    [auth]        tokens: plain, or [auth.tokens.<name>] with a hash, a role and devices (none: no auth)
    [logging]     level and format
    [supervisor]  restart backoff of failed adapters
    [rosbridge]   the rosbridge v2 listener (off unless enabled)
    [mqtt]        the MQTT bridge: broker, export, federation, Home Assistant discovery (off unless set)
    [tdm]         the Thymio Device Manager face (Thymio Suite, tdmclient): off unless enabled
    [foxglove]    the Foxglove WebSocket listener (off unless enabled)
    [ros2]        the gateway as ROS 2 nodes on a DDS domain (off unless enabled; the `ros2` extra)
    [record]      the daemon records its bus to MCAP files in a folder (off while `folder` is empty)
    [devices.<id>]  kind = "...", enabled = true, ros_namespace = "", then the kind's own options
    [bindings.<name>]  a controller drives a device (docs/bindings.md), checked against the devices
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tomllib
import types
import typing
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from gateway.bindings.spec import BindingsConfig, check_bindings, parse_bindings_section
from gateway.core.adapter import NO_KINDS, DeviceKinds
from gateway.core.config_overrides import Overrides, layer, overrides_path, read_overrides
from gateway.credentials import Credential, Role, parse_digest
from gateway.errors import ConfigError
from gateway.topics import check_device_id

T = TypeVar("T")


def _range(low: float | None = None, high: float | None = None) -> dict[str, float | None]:
    return {"min": low, "max": high}


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Where clients connect, and the limits each connection lives with.

    Ports 0 pick a free port (for tests); `msgpack_port = -1` and `unix_socket = ""` disable those
    listeners. Sizes are in bytes, times in seconds, rates in requests per second.
    `send_buffer_bytes` caps each client socket's kernel send buffer (0: the OS default), so a client
    that stops reading holds at most that much; past it, its mailbox keeps only the newest samples.

    Abuse limits: `max_clients` connections in all (WebSocket, msgpack TCP and Unix, and HTTP
    requests in progress), at most `max_clients_per_peer` from one IP address, and never more than
    the open-file limit allows after keeping `fd_reserve` descriptors for devices and `/healthz`.
    A client must authenticate within `auth_timeout_s` (when tokens are set), finish a request it
    has begun within `read_timeout_s`, and on the msgpack socket send something at least every
    `idle_timeout_s` (`ping` is enough). All connections together may hold `max_partial_bytes` of
    requests that have begun but not ended. An HTTP request's headers must arrive within
    `http_header_timeout_s`, in at most `http_max_headers` lines of at most `http_max_field_bytes`.
    `max_queued_bytes` of results may wait for a client that does not read before the gateway
    stops reading its requests. A client whose requests keep being refused (bad frames, unknown
    ops, over the rate) is closed past `refusal_burst` of them, then `max_requests_per_s` a second.
    Timeouts of 0 are off.
    """

    host: str = "127.0.0.1"
    http_port: int = field(default=8470, metadata=_range(0, 65535))
    msgpack_port: int = field(default=8471, metadata=_range(-1, 65535))
    unix_socket: str = "/run/hwgateway/hwgateway.sock"
    max_request_bytes: int = field(default=65536, metadata=_range(256, 64 * 1024 * 1024))
    max_frame_bytes: int = field(default=1048576, metadata=_range(256, 256 * 1024 * 1024))
    command_timeout_s: float = field(default=5.0, metadata=_range(0.001, 3600))
    max_requests_per_s: float = field(default=200.0, metadata=_range(0.1, 1e6))
    request_burst: int = field(default=400, metadata=_range(1, 1_000_000))
    refusal_burst: int = field(default=64, metadata=_range(1, 1_000_000))
    max_inflight_commands: int = field(default=32, metadata=_range(1, 10_000))
    heartbeat_s: float = field(default=30.0, metadata=_range(0, 3600))
    send_buffer_bytes: int = field(default=262144, metadata=_range(0, 64 * 1024 * 1024))
    #: Web pages (by their `Origin`) that may open a WebSocket besides those `default_origins` admits;
    #: `"*"` admits every page. The rule is `gateway.core.origins`'.
    allowed_origins: tuple[str, ...] = ()
    #: Admit, on every listener, pages from a desktop app (`file://`) and from loopback addresses (any
    #: port), and on the Foxglove and rosbridge listeners the official hosted viewers; false: only the
    #: listener's own pages, programs (no Origin) and `allowed_origins`.
    default_origins: bool = True
    #: Extra names the HTTP listeners answer to (besides IP literals, localhost and the host's own
    #: names); `.example.org` admits every name under it, `*` every name (no DNS-rebinding guard).
    allowed_hosts: tuple[str, ...] = ()
    #: PEM certificate chain and private key: with both set, HTTP/WebSocket and msgpack TCP speak TLS
    #: (https://, wss://); the Unix socket stays plain (file permissions guard it).
    tls_cert: str = ""
    tls_key: str = ""
    max_clients: int = field(default=1000, metadata=_range(1, 1_000_000))
    max_clients_per_peer: int = field(default=64, metadata=_range(1, 1_000_000))
    fd_reserve: int = field(default=64, metadata=_range(16, 100_000))
    auth_timeout_s: float = field(default=10.0, metadata=_range(0, 3600))
    read_timeout_s: float = field(default=10.0, metadata=_range(0, 3600))
    idle_timeout_s: float = field(default=120.0, metadata=_range(0, 86400))
    max_partial_bytes: int = field(default=16 * 1024 * 1024, metadata=_range(4096, 4 * 1024 * 1024 * 1024))
    max_queued_bytes: int = field(default=1024 * 1024, metadata=_range(4096, 1024 * 1024 * 1024))
    http_header_timeout_s: float = field(default=10.0, metadata=_range(0.1, 3600))
    http_max_headers: int = field(default=64, metadata=_range(8, 10_000))
    http_max_field_bytes: int = field(default=8190, metadata=_range(256, 1024 * 1024))
    #: A TOML file of `[devices.<id>]` option values layered over this file's: where the dashboard's
    #: and the admin `configure_device` op's edits are kept (`gateway.core.config_overrides`); a
    #: relative path is from this file's folder. "": device options cannot be edited while running.
    device_overrides: str = ""


@dataclass(frozen=True, slots=True)
class TokenConfig:
    """`[auth.tokens.<name>]`: one token, its `role` and the device id patterns (`devices`) it may command.

    The token is given by its `hash` (`hwgateway hash-token` prints it) or a `token_file` holding it.
    """

    hash: str = ""
    token_file: str = ""
    role: Role = "control"
    devices: tuple[str, ...] = ("*",)


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """Tokens a client may present with `auth`; when there are none, no authentication is asked.

    `tokens` is either an array of plain tokens (each an `admin` of every device; kept for old
    configs) or a table of named tokens (`TokenConfig`), stored as `credentials`.
    """

    tokens: tuple[str, ...] = ()
    credentials: tuple[Credential, ...] = ()

    def all_credentials(self) -> tuple[Credential, ...]:
        """Every accepted token, the plain ones first."""
        plain = tuple(
            Credential(f"tokens[{i}]", hashlib.sha256(t.encode()).digest()) for i, t in enumerate(self.tokens)
        )
        return plain + self.credentials


@dataclass(frozen=True, slots=True)
class LoggingConfig:
    """Log `level`, and `format`: auto (console on a TTY, JSON otherwise), json or console."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"


@dataclass(frozen=True, slots=True)
class SupervisorConfig:
    """Restart policy of failed adapters (seconds): delay doubles from initial up to max.

    The delay starts over once an adapter stayed connected for `backoff_reset_s`.
    """

    backoff_initial_s: float = field(default=0.5, metadata=_range(0.01, 3600))
    backoff_max_s: float = field(default=30.0, metadata=_range(0.01, 86400))
    backoff_reset_s: float = field(default=10.0, metadata=_range(0, 86400))
    stop_timeout_s: float = field(default=5.0, metadata=_range(0.1, 600))


@dataclass(frozen=True, slots=True)
class RosbridgeConfig:
    """The rosbridge v2 endpoint (docs/rosbridge.md) for roslibjs / roslibpy clients.

    When `enabled`, it listens on `server.host`:`port` at path `/` (0 picks a free port) and also
    at `/rosbridge` on the HTTP port; it shares the server's limits, Origin rules and tokens.
    """

    enabled: bool = False
    port: int = field(default=9090, metadata=_range(0, 65535))


@dataclass(frozen=True, slots=True)
class MqttConfig:
    """`[mqtt]`: the bridge to an MQTT broker (docs/mqtt.md); off while `url` is empty.

    `url` is `mqtt://[user:password@]host[:port]` or `mqtts://...` (TLS; `ca_file` pins the broker's
    CA, `cert_file`/`key_file` give a client certificate). `gateway` names this gateway in topics
    (default: the host name); `base` is the topic root. Each exported topic is sent at most
    `publish_rate_hz` times a second (latest value wins); `topics` are the bus patterns exported.
    `import` shows other gateways' devices here; `ha_discovery` publishes Home Assistant discovery
    under `ha_prefix`. Times are in seconds. `token_file` holds the token this gateway presents
    with the commands it forwards to other gateways that have `[auth]` tokens.
    """

    url: str = ""
    gateway: str = ""
    base: str = "hwgw"
    publish_rate_hz: float = field(default=50.0, metadata=_range(0.01, 10000))
    topics: tuple[str, ...] = ("**",)
    import_: bool = False  # the TOML key is `import`, a Python keyword
    ha_discovery: bool = False
    ha_prefix: str = "homeassistant"
    keepalive_s: int = field(default=5, metadata=_range(1, 3600))
    reconnect_initial_s: float = field(default=0.2, metadata=_range(0.01, 3600))
    reconnect_max_s: float = field(default=10.0, metadata=_range(0.01, 3600))
    max_payload_bytes: int = field(default=65536, metadata=_range(256, 16 * 1024 * 1024))
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    token_file: str = ""

    @property
    def enabled(self) -> bool:
        """True when a broker is configured."""
        return bool(self.url)


@dataclass(frozen=True, slots=True)
class TdmConfig:
    """`[tdm]`: the Thymio Device Manager face, for Thymio Suite and tdmclient (off unless `enabled`).

    TCP (4-byte little-endian length + one flatbuffer) on `tcp_port` and WebSocket (one binary
    message per flatbuffer) on `ws_port`; the defaults are the real TDM's ports, so both cannot run
    on one machine. Ports 0 pick free ones (tests). `host` is loopback by default; with tokens in
    `[auth]`, a client gives its token as the handshake's password. `zeroconf` announces the face
    as `_mobsya._tcp` (so Thymio Suite finds it; needs the `zeroconf` extra, off by default).
    """

    enabled: bool = False
    host: str = "127.0.0.1"
    tcp_port: int = field(default=8596, metadata=_range(0, 65535))
    ws_port: int = field(default=8597, metadata=_range(0, 65535))
    zeroconf: bool = False
    #: Device-id glob patterns, each one TDM group (shared events and variables) of every node it
    #: matches (the first match wins); a node no pattern matches is alone in its group.
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FoxgloveConfig:
    """The Foxglove WebSocket endpoint (docs/foxglove.md) for the Foxglove and Lichtblick apps.

    When `enabled`, it listens on `server.host`:`port` (0 picks a free port) and shares the server's
    limits, TLS, Host and Origin rules and tokens (a token goes in the URL: `?token=`).
    """

    enabled: bool = False
    port: int = field(default=8765, metadata=_range(0, 65535))


_INTERFACE = re.compile(r"[A-Za-z0-9_.:-]{1,15}")
_NODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


@dataclass(frozen=True, slots=True)
class Ros2Config:
    """`[ros2]`: the gateway as ROS 2 nodes on a DDS domain (docs/ros2.md), without ROS; off unless enabled.

    `domain_id` is the DDS domain (ROS_DOMAIN_ID, 0-232). `interfaces` is the allow-list of network
    interfaces DDS uses (names, as `ip link` shows them): DDS has no authentication, so anyone who
    reaches the domain reads every topic and drives every command topic; the default keeps it on
    loopback. `node_name` is the gateway's own node, which publishes its status.
    """

    enabled: bool = False
    domain_id: int = field(default=0, metadata=_range(0, 232))
    interfaces: tuple[str, ...] = ("lo",)
    node_name: str = "hwgateway"

    def __post_init__(self) -> None:
        if not self.interfaces:
            raise ValueError('interfaces: name at least one network interface ("lo": loopback only)')
        for name in self.interfaces:
            if not _INTERFACE.fullmatch(name):
                raise ValueError(f"interfaces: {name!r} is no network interface name")
        if not _NODE_NAME.fullmatch(self.node_name):
            raise ValueError(
                f"node_name: {self.node_name!r} is no ROS node name (letters, digits and _, not starting with a digit)"
            )


@dataclass(frozen=True, slots=True)
class RecordConfig:
    """`[record]`: the daemon records its own bus to MCAP files (README "Record and replay"); off while `folder` is "".

    Files are `<folder>/<prefix>-<UTC time>-<n>.mcap`. `topics`: bus patterns recorded (availability
    always is; `commands` adds every command and its result from every client). A file ends and the
    next begins at the first chunk boundary past `max_file_bytes` (0: no size limit) or once it is
    `max_file_s` seconds old (0: no time limit); while the folder's recordings of this prefix exceed
    `max_total_bytes` (0: no limit) the oldest are removed. `compression`: zstd, lz4 or none;
    `chunk_bytes`: uncompressed chunk size; `queue`: messages waiting for the writer thread beyond
    which samples are dropped (counted on /healthz and /metrics). `format`: "json" (MCAP of JSON
    messages, the files above) or "ros2" (a rosbag2 directory `<folder>/<prefix>_<UTC time>/` of CDR
    messages that ROS 2 tools open, split at the same limits; `gateway.record.bag`).
    """

    folder: str = ""
    format: Literal["json", "ros2"] = "json"
    prefix: str = "hwgateway"
    topics: tuple[str, ...] = ("**",)
    commands: bool = True
    compression: Literal["zstd", "lz4", "none"] = "zstd"
    chunk_bytes: int = field(default=1024 * 1024, metadata=_range(1024, 64 * 1024 * 1024))
    queue: int = field(default=10_000, metadata=_range(1, 10_000_000))
    max_file_bytes: int = field(default=0, metadata=_range(0, 1 << 50))
    max_file_s: float = field(default=0.0, metadata=_range(0, 7 * 86400))
    max_total_bytes: int = field(default=0, metadata=_range(0, 1 << 50))

    @property
    def enabled(self) -> bool:
        """True when a folder is set."""
        return bool(self.folder)


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    """One configured device: its stable `id`, adapter `kind` and the kind's `options`.

    `ros_namespace` replaces the ROS namespace the rosbridge face derives from the id ("": derive it);
    the face checks it (`Extensions.checks`).
    """

    id: str
    kind: str
    enabled: bool
    options: Any
    ros_namespace: str = ""


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration."""

    server: ServerConfig = ServerConfig()
    auth: AuthConfig = AuthConfig()
    logging: LoggingConfig = LoggingConfig()
    supervisor: SupervisorConfig = SupervisorConfig()
    rosbridge: RosbridgeConfig = RosbridgeConfig()
    mqtt: MqttConfig = MqttConfig()
    tdm: TdmConfig = TdmConfig()
    foxglove: FoxgloveConfig = FoxgloveConfig()
    ros2: Ros2Config = Ros2Config()
    record: RecordConfig = RecordConfig()
    devices: tuple[DeviceConfig, ...] = ()
    bindings: BindingsConfig = field(default_factory=BindingsConfig)


#: A check a face makes of the config once every section is read: it gets the sections read (by
#: name), the paths already reported (a check involving one of them is skipped: the value it would
#: see is a default, not the file's) and the device kinds, and returns its problems.
ConfigCheck = Callable[[Mapping[str, Any], Set[str], DeviceKinds], list[ConfigError]]


@dataclass(frozen=True, slots=True)
class Extensions:
    """What the composition root plugs into reading a config: the device kinds and the faces' own checks.

    With none, no `[devices.<id>]` table is accepted (no kind is known) and only the core's checks run.
    """

    kinds: DeviceKinds = NO_KINDS
    checks: tuple[ConfigCheck, ...] = ()


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r}"


def _convert(value: object, hint: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"expected true or false, got {_describe(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"expected an integer, got {_describe(value)}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, f"expected a number, got {_describe(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"expected a string, got {_describe(value)}")
        return value
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(path, f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return value
    if origin is tuple:
        item_hint = typing.get_args(hint)[0]
        if not isinstance(value, list):
            raise ConfigError(path, f"expected an array, got {_describe(value)}")
        return tuple(_convert(item, item_hint, f"{path}[{index}]") for index, item in enumerate(value))
    if origin in (types.UnionType, typing.Union):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _convert(value, args[0], path)
    raise TypeError(f"{path}: unsupported config type {hint!r}")


def build(cls: type[T], table: object, path: str, skip: tuple[str, ...] = ()) -> T:
    """Build config dataclass `cls` from a TOML table, refusing unknown keys and wrong types.

    Every bad key of the table is reported at once (one `ConfigError` standing for all of them).
    """
    value, problems = build_partial(cls, table, path, skip)
    if problems or value is None:
        raise ConfigError.combine(problems)
    return value


def build_partial(
    cls: type[T], table: object, path: str, skip: tuple[str, ...] = ()
) -> tuple[T | None, list[ConfigError]]:
    """`build`, returning every problem instead of raising, with the object built as far as it can be.

    The object holds the good keys and the defaults of the bad ones, so that the class's own checks
    (`__post_init__`) and the checks across sections still run in the same pass: a file is reported
    whole. It is None when a required key is missing or the class's own checks fail.
    """
    if not isinstance(table, dict):
        return None, [ConfigError(path, f"expected a table, got {_describe(table)}")]
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    problems: list[ConfigError] = []
    prefix = f"{path}." if path else ""
    for key, raw in table.items():
        if key in skip:
            continue
        if key not in fields:
            known = ", ".join(sorted(k for k in fields if k not in skip)) or "none"
            problems.append(ConfigError(f"{prefix}{key}", f"unknown key (known keys: {known})"))
            continue
        try:
            value = _convert(raw, hints[key], f"{prefix}{key}")
        except ConfigError as error:
            problems.append(error)
            continue
        low, high = fields[key].metadata.get("min"), fields[key].metadata.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            problems.append(ConfigError(f"{prefix}{key}", f"{value!r} is outside [{low}, {high}]"))
            continue
        values[key] = value
    missing = [
        ConfigError(f"{prefix}{name}", "required key is missing")
        for name, f in fields.items()
        if name not in values
        and name not in table
        and name not in skip
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        return None, problems + missing
    required_but_bad = any(
        name not in values
        and name not in skip
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
        for name, f in fields.items()
    )
    if required_but_bad:  # already reported above; there is no default to build the object with
        return None, problems
    try:
        return cls(**values), problems
    except ValueError as error:
        return None, [*problems, ConfigError(path, str(error))]


def _build_device(
    device_id: str, device_table: object, kinds: DeviceKinds
) -> tuple[DeviceConfig | None, list[ConfigError]]:
    path = f"devices.{device_id}"
    try:
        check_device_id(device_id)
    except ValueError as error:
        return None, [ConfigError(path, str(error))]
    if not isinstance(device_table, dict):
        return None, [ConfigError(path, f"expected a table, got {_describe(device_table)}")]
    if "kind" not in device_table:
        known = ", ".join(kinds.kinds()) or "none"
        return None, [ConfigError(f"{path}.kind", f"required key is missing (one of: {known})")]
    try:
        kind = _convert(device_table["kind"], str, f"{path}.kind")
    except ConfigError as error:
        return None, [error]
    if kind not in kinds.kinds():
        known = ", ".join(kinds.kinds()) or "none"
        return None, [ConfigError(f"{path}.kind", f"unknown device kind {kind!r} (known kinds: {known})")]
    # A kind whose optional dependencies are missing would retry for ever at start: refuse it here.
    # (Its options cannot always be read either: the BLE kinds' options live beside bleak's imports.)
    why = kinds.missing_extra(kind)
    if why is not None:
        return None, [ConfigError(f"{path}.kind", why)]
    options_cls = kinds.options_class(kind)
    problems: list[ConfigError] = []
    enabled = True
    try:
        enabled = _convert(device_table.get("enabled", True), bool, f"{path}.enabled")
    except ConfigError as error:
        problems.append(error)
    namespace = ""
    try:  # only its type here: the rosbridge face checks the name (`Extensions.checks`)
        namespace = _convert(device_table.get("ros_namespace", ""), str, f"{path}.ros_namespace")
    except ConfigError as error:
        problems.append(error)
    options, option_problems = build_partial(options_cls, device_table, path, skip=("kind", "enabled", "ros_namespace"))
    problems += option_problems
    if options is None:
        return None, problems
    return DeviceConfig(device_id, kind, enabled, options, namespace), problems


def _exclusive_resources(devices: tuple[DeviceConfig, ...]) -> list[ConfigError]:
    """Two enabled devices that would take the same hardware (options with `exclusive_resource()`)."""
    owners: dict[str, str] = {}
    problems = []
    for device in devices:
        claim = getattr(device.options, "exclusive_resource", None)
        resource = claim() if callable(claim) and device.enabled else None
        if resource is None:
            continue
        if resource in owners:
            problems.append(
                ConfigError(f"devices.{device.id}", f"{resource} is already taken by devices.{owners[resource]}")
            )
        else:
            owners[resource] = device.id
    return problems


def _build_devices(table: object, kinds: DeviceKinds) -> tuple[tuple[DeviceConfig, ...] | None, list[ConfigError]]:
    if not isinstance(table, dict):
        return None, [ConfigError("devices", f"expected a table of [devices.<id>] tables, got {_describe(table)}")]
    devices = []
    problems: list[ConfigError] = []
    for device_id, device_table in table.items():
        device, device_problems = _build_device(device_id, device_table, kinds)
        problems += device_problems
        if device is not None:
            devices.append(device)
    problems += _exclusive_resources(tuple(devices))
    return tuple(devices), problems


def _build_auth(table: object) -> tuple[AuthConfig | None, list[ConfigError]]:
    from gateway.credentials import MIN_TOKEN_CHARS

    if not isinstance(table, dict) or not isinstance(table.get("tokens"), dict):
        auth, problems = build_partial(AuthConfig, table, "auth", skip=("credentials",))
        if auth is not None:
            # The same floor as `hwgateway hash-token`: a short plain token is guessed, not a secret.
            problems += [
                ConfigError(f"auth.tokens[{index}]", f"a token must be at least {MIN_TOKEN_CHARS} characters")
                for index, token in enumerate(auth.tokens)
                if len(token) < MIN_TOKEN_CHARS
            ]
        return auth, problems
    _, problems = build_partial(AuthConfig, table, "auth", skip=("tokens", "credentials"))  # refuses unknown keys
    credentials = []
    sources: dict[str, str] = {}
    for name, token_table in table["tokens"].items():
        credential, token_problems = _build_credential(name, token_table)
        problems += token_problems
        if credential is not None:
            credentials.append(credential)
            if isinstance(token_table, dict):
                sources[name] = "token_file" if token_table.get("token_file") else "hash"
    problems += _shared_tokens(credentials, sources)
    return AuthConfig(credentials=tuple(credentials)), problems


def _shared_tokens(credentials: list[Credential], sources: dict[str, str]) -> list[ConfigError]:
    """Two named tokens that are one token (a shared token_file, or the same hash) granting different rights.

    A client presenting it would get whichever comes first: refuse rather than guess.
    """
    first: dict[bytes, Credential] = {}
    problems = []
    for credential in credentials:
        other = first.setdefault(credential.digest, credential)
        if other is credential or (other.role, other.devices) == (credential.role, credential.devices):
            continue
        problems.append(
            ConfigError(
                f"auth.tokens.{credential.name}.{sources.get(credential.name, 'hash')}",
                f"the same token as auth.tokens.{other.name} with another role or devices "
                f"({credential.role} {list(credential.devices)} vs {other.role} {list(other.devices)}): "
                "give each its own token",
            )
        )
    return problems


def _build_credential(name: str, token_table: object) -> tuple[Credential | None, list[ConfigError]]:
    """One `[auth.tokens.<name>]` table as a credential (its token only as a SHA-256 digest)."""
    from gateway.credentials import MIN_TOKEN_CHARS

    path = f"auth.tokens.{name}"
    token, problems = build_partial(TokenConfig, token_table, path)
    if token is None:
        return None, problems
    if not token.devices:
        problems.append(ConfigError(f"{path}.devices", 'expected at least one device id pattern (["*"]: every device)'))
    if bool(token.hash) == bool(token.token_file):
        problems.append(ConfigError(path, "set exactly one of hash (from `hwgateway hash-token`) and token_file"))
        return None, problems
    digest = b""
    if token.hash:
        try:
            digest = parse_digest(token.hash)
        except ValueError as error:
            problems.append(ConfigError(f"{path}.hash", str(error)))
    else:
        try:
            secret = Path(token.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            problems.append(ConfigError(f"{path}.token_file", f"cannot read {token.token_file}: {error}"))
        else:
            if len(secret) < MIN_TOKEN_CHARS:
                problems.append(
                    ConfigError(f"{path}.token_file", f"the token must be at least {MIN_TOKEN_CHARS} characters")
                )
            digest = hashlib.sha256(secret.encode()).digest()
    if not digest:
        return None, problems
    return Credential(name, digest, token.role, token.devices), problems


_MQTT_SCHEMES = {"mqtt": 1883, "mqtts": 8883}


def _build_mqtt(table: object) -> tuple[MqttConfig | None, list[ConfigError]]:
    """`[mqtt]`, every problem at once: the URL, names, patterns, TLS files and the token file."""
    if isinstance(table, dict) and "import" in table:
        table = {("import_" if key == "import" else key): value for key, value in table.items()}
    mqtt, problems = build_partial(MqttConfig, table, "mqtt")
    if mqtt is None or not mqtt.url:
        return mqtt, problems
    from urllib.parse import urlsplit

    from gateway.errors import InvalidArgument
    from gateway.topics import parse_pattern

    scheme = ""
    try:
        url = urlsplit(mqtt.url)
        url.port  # noqa: B018  (a bad port raises here)
    except ValueError as error:
        problems.append(ConfigError("mqtt.url", f"not a valid URL: {error}"))
    else:
        scheme = url.scheme
        if url.scheme not in _MQTT_SCHEMES or not url.hostname:
            problems.append(
                ConfigError("mqtt.url", f"expected mqtt://host[:port] or mqtts://host[:port], got {mqtt.url!r}")
            )
        elif url.path not in ("", "/") or url.query or url.fragment:
            problems.append(ConfigError("mqtt.url", "a broker URL has no path, query or fragment"))
        else:
            from gateway.hostnames import check_host

            try:
                check_host(url.hostname)
            except ValueError as error:
                problems.append(ConfigError("mqtt.url", str(error)))
    for key, value in (("gateway", mqtt.gateway), ("base", mqtt.base)):
        if value:
            try:
                check_device_id(value)
            except ValueError:
                problems.append(ConfigError(f"mqtt.{key}", f"{value!r} must be 1-128 letters, digits and _ . : -"))
    if not mqtt.base:
        problems.append(ConfigError("mqtt.base", "must not be empty"))
    for index, pattern in enumerate(mqtt.topics):
        try:
            parse_pattern(pattern)
        except InvalidArgument as error:
            problems.append(ConfigError(f"mqtt.topics[{index}]", error.message))
    if bool(mqtt.cert_file) != bool(mqtt.key_file):
        problems.append(
            ConfigError("mqtt.key_file" if mqtt.cert_file else "mqtt.cert_file", "set both cert_file and key_file")
        )
    if (mqtt.ca_file or mqtt.cert_file) and scheme and scheme != "mqtts":
        problems.append(ConfigError("mqtt.url", "ca_file and cert_file need an mqtts:// URL"))
    if mqtt.reconnect_max_s < mqtt.reconnect_initial_s:
        problems.append(ConfigError("mqtt.reconnect_max_s", "must be at least mqtt.reconnect_initial_s"))
    for key in ("ca_file", "cert_file", "key_file", "token_file"):
        path = getattr(mqtt, key)
        if path:
            try:
                content = Path(path).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as error:
                problems.append(ConfigError(f"mqtt.{key}", f"cannot read {path}: {error}"))
                continue
            if key == "token_file" and not content:
                problems.append(ConfigError("mqtt.token_file", f"{path} is empty"))
    return mqtt, problems


_MIN_FILE_BYTES = 16 * 1024
_MIN_FILE_S = 1.0


def _build_record(table: object) -> tuple[RecordConfig | None, list[ConfigError]]:
    """`[record]`, every problem at once: patterns, prefix, folder, and the limits against each other."""
    record, problems = build_partial(RecordConfig, table, "record")
    if record is None:
        return None, problems
    from gateway.errors import InvalidArgument
    from gateway.topics import parse_pattern

    for index, pattern in enumerate(record.topics):
        try:
            parse_pattern(pattern)
        except InvalidArgument as error:
            problems.append(ConfigError(f"record.topics[{index}]", error.message))
    if not record.topics:
        problems.append(ConfigError("record.topics", 'expected at least one pattern (["**"]: every topic)'))
    try:
        check_device_id(record.prefix)
    except ValueError:
        problems.append(ConfigError("record.prefix", f"{record.prefix!r} must be 1-128 letters, digits and _ . : -"))
    folder = Path(record.folder) if record.folder else None
    if folder is not None and folder.exists() and not folder.is_dir():
        problems.append(ConfigError("record.folder", f"{record.folder} exists and is not a folder"))
    elif folder is not None and folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        problems.append(ConfigError("record.folder", f"{record.folder} is not writable"))
    if record.max_file_bytes and record.max_file_bytes < _MIN_FILE_BYTES:
        problems.append(ConfigError("record.max_file_bytes", f"0 (no limit) or at least {_MIN_FILE_BYTES}"))
    elif record.max_file_bytes and record.chunk_bytes > record.max_file_bytes:
        problems.append(ConfigError("record.chunk_bytes", "must be at most record.max_file_bytes"))
    if record.max_file_s and record.max_file_s < _MIN_FILE_S:
        problems.append(ConfigError("record.max_file_s", f"0 (no limit) or at least {_MIN_FILE_S:g} s"))
    if record.max_total_bytes:
        if not (record.max_file_bytes or record.max_file_s):
            problems.append(
                ConfigError("record.max_total_bytes", "needs rotation: set record.max_file_bytes or record.max_file_s")
            )
        elif record.max_total_bytes < 2 * record.max_file_bytes:
            problems.append(
                ConfigError("record.max_total_bytes", "must be at least twice record.max_file_bytes (two files)")
            )
    return record, problems


def parse(document: dict[str, Any], extensions: Extensions) -> Config:
    """Build a `Config` from a parsed TOML document; raise one `ConfigError` listing every problem.

    Every section is read even when another has errors, and the checks across sections (the core's,
    then each of `extensions.checks`) run on what could be read, so one pass reports the whole file.
    """
    from gateway.core import config_checks

    sections = {f.name for f in dataclasses.fields(Config)}
    problems = [
        ConfigError(key, f"unknown section (known sections: {', '.join(sorted(sections))})")
        for key in document
        if key not in sections
    ]
    builders: dict[str, Callable[[object], tuple[Any, list[ConfigError]]]] = {
        "server": lambda table: build_partial(ServerConfig, table, "server"),
        "auth": _build_auth,
        "logging": lambda table: build_partial(LoggingConfig, table, "logging"),
        "supervisor": lambda table: build_partial(SupervisorConfig, table, "supervisor"),
        "rosbridge": lambda table: build_partial(RosbridgeConfig, table, "rosbridge"),
        "mqtt": _build_mqtt,
        "tdm": lambda table: build_partial(TdmConfig, table, "tdm"),
        "foxglove": lambda table: build_partial(FoxgloveConfig, table, "foxglove"),
        "ros2": lambda table: build_partial(Ros2Config, table, "ros2"),
        "record": _build_record,
        "devices": lambda table: _build_devices(table, extensions.kinds),
        "bindings": parse_bindings_section,
    }
    built: dict[str, Any] = {}
    for name, builder in builders.items():
        value, section_problems = builder(document.get(name, {}))
        problems += section_problems
        if value is not None:
            built[name] = value
    # Keys already reported are left out of the checks across sections (their values are defaults here).
    reported = {problem.path for problem in problems}
    problems += config_checks.across_sections(built, reported)
    if "bindings" in built:  # every input path and output field against the devices' schemas
        devices = {device.id: device for device in built.get("devices", ())}
        problems += check_bindings(built["bindings"].bindings, devices, extensions.kinds)
    for check in extensions.checks:
        problems += check(built, reported, extensions.kinds)
    if problems:
        raise ConfigError.combine(problems)
    return Config(**built)


def loads(text: str, extensions: Extensions) -> Config:
    """Parse TOML text into a `Config`."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError("", f"not valid TOML: {error}") from None
    return parse(document, extensions)


def load(path: str | Path, extensions: Extensions, overrides: Overrides | None = None) -> Config:
    """Read and parse the configuration file at `path`, with its `[server] device_overrides` layered over it.

    `overrides` replaces what the overrides file holds (to check an edit before it is written).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError("", f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError("", f"{path} is not UTF-8 text") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError("", f"not valid TOML: {error}") from None
    layered = overrides_path(document, Path(path))
    if layered is None:
        if overrides:
            raise ConfigError("server.device_overrides", "not set: device options cannot be changed")
        return parse(document, extensions)
    problems = layer(document, read_overrides(layered) if overrides is None else overrides, str(layered))
    try:
        config = parse(document, extensions)
    except ConfigError as error:
        raise ConfigError.combine([*problems, error]) from None
    if problems:
        raise ConfigError.combine(problems)
    return config
