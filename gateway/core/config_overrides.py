"""Device options edited while the gateway runs, kept in a file of their own over the configuration file.

The dashboard and the admin `configure_device` op change a device's options without touching the
configuration file an administrator wrote (the service cannot write it: `/etc` is read-only to it).
The edits live in `[server] device_overrides`, a TOML file of `[devices.<id>]` tables holding only
the keys changed; reading the configuration layers each table's keys over the device's own, so
`hwgateway check-config`, a reload and a restart all see the same devices. Removing the file (or a
key from it) brings back the configuration file's values.

An override may not name a device the configuration file lacks, nor change a device's `kind`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gateway.errors import ConfigError

#: The `[server]` key naming the overrides file.
OVERRIDES_KEY = "device_overrides"
#: Keys an override may not change: they say what the device is, not how it runs.
FIXED_KEYS = frozenset({"kind"})

#: Overrides by device id: option name -> value (as TOML gives them).
Overrides = dict[str, dict[str, Any]]


def resolve(setting: object, config_path: Path) -> Path | None:
    """The overrides file a `device_overrides` setting names (relative to the config's folder); None: none."""
    if not isinstance(setting, str) or not setting:
        return None  # a wrong type is reported by the [server] section's own check
    return config_path.parent / setting


def overrides_path(document: Mapping[str, Any], config_path: Path) -> Path | None:
    """The overrides file a parsed configuration names, or None when it names none."""
    server = document.get("server")
    return resolve(server.get(OVERRIDES_KEY) if isinstance(server, Mapping) else None, config_path)


def parse_overrides(text: str, source: str) -> Overrides:
    """The overrides in TOML `text` (read from `source`); `ConfigError` when it is not `[devices.<id>]` tables."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(source, f"not valid TOML: {error}") from None
    unknown = [key for key in document if key != "devices"]
    if unknown:
        raise ConfigError(source, f"holds only [devices.<id>] tables, not {', '.join(sorted(unknown))}")
    devices = document.get("devices", {})
    if not all(isinstance(table, dict) for table in devices.values()):
        raise ConfigError(source, "expected [devices.<id>] tables")
    return {device: dict(table) for device, table in devices.items()}


def read_overrides(path: Path) -> Overrides:
    """The overrides in the file at `path` (none when it does not exist)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ConfigError(str(path), f"cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), "not UTF-8 text") from None
    return parse_overrides(text, str(path))


def layer(document: dict[str, Any], overrides: Overrides, source: str) -> list[ConfigError]:
    """Put each override's keys over its device's table in `document` (in place); the problems found."""
    devices = document.get("devices")
    problems = []
    for device, values in overrides.items():
        table = devices.get(device) if isinstance(devices, dict) else None
        if not isinstance(table, dict):
            problem = ConfigError(f"{source}: devices.{device}", "no device of this id in the configuration file")
            problems.append(problem)
            continue
        fixed = sorted(FIXED_KEYS & values.keys())
        if fixed:
            problems.append(ConfigError(f"{source}: devices.{device}.{fixed[0]}", "cannot be changed by an override"))
            continue
        table.update(values)
    return problems


def render(overrides: Overrides) -> str:
    """The overrides as the TOML file's text (devices and keys sorted), with a comment saying what it is."""
    import tomlkit

    document = tomlkit.document()
    document.add(tomlkit.comment("Device options changed from the dashboard or the configure_device op (hwgateway)."))
    document.add(tomlkit.comment("They replace the configuration file's values; delete a key to go back to it."))
    devices = tomlkit.table(is_super_table=True)
    for device in sorted(overrides):
        table = tomlkit.table()
        for key in sorted(overrides[device]):
            table.add(key, overrides[device][key])
        devices.add(device, table)
    document.add("devices", devices)
    return tomlkit.dumps(document)
