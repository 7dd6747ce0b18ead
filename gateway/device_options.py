"""Editing a device's options while the gateway runs: the admin `device_options` and `configure_device` ops.

Part of the composition root. An edit goes through the same path as `hwgateway reload`: the new
value is layered over the configuration file (`gateway.core.config_overrides`) and the whole file is
checked as `check-config` checks it; on any problem nothing is written and every problem is named.
Otherwise the overrides file is replaced atomically and the gateway reloads, which restarts only the
edited device, through its safe state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.core.config import Config
from gateway.core.config_overrides import Overrides, read_overrides, render, resolve
from gateway.errors import ConfigError, DeviceUnavailable, InvalidArgument, UnknownDevice
from gateway.reload import error_lines

if TYPE_CHECKING:
    from gateway.app import Gateway

log = logging.getLogger(__name__)

#: Option names whose values are never sent to a client (a password is replaced, not shown).
SECRET_WORDS = ("password", "secret", "token", "passkey")


def is_secret(name: str) -> bool:
    """True for an option whose value a client is never sent."""
    return any(word in name for word in SECRET_WORDS)


class DeviceOptionsEditor:
    """The device-options ops of one gateway started from `config_path` (None: the demo's, which has none).

    `load(path, overrides)` reads the configuration as the gateway does, with `overrides` in place of
    the overrides file's (`gateway.config.load`). One edit at a time.
    """

    def __init__(self, gateway: Gateway, load: Callable[[Path, Overrides | None], Config]) -> None:
        self._gateway = gateway
        self._load = load
        self._lock = asyncio.Lock()

    def _paths(self) -> tuple[Path, Path]:
        """The configuration file and its overrides file; `DeviceUnavailable` saying why editing is off."""
        config_path = self._gateway.reloader.path
        if config_path is None:
            raise DeviceUnavailable("this gateway was not started from a file (the demo): its options cannot be edited")
        layered = resolve(self._gateway.config.server.device_overrides, config_path)
        if layered is None:
            raise DeviceUnavailable(
                "editing device options is off: set [server] device_overrides to a file the gateway may write "
                '(the service\'s: "/var/lib/hwgateway/device-overrides.toml") and restart it'
            )
        return config_path, layered

    def options(self, device: str) -> dict[str, Any]:
        """`device`'s options as running: every option with its value, which ones are overridden, the file."""
        _, layered = self._paths()
        configured = next((d for d in self._gateway.config.devices if d.id == device), None)
        if configured is None:
            raise UnknownDevice(f"no configured device {device!r} (an imported or a binding's device has no options)")
        options = configured.options
        is_instance = dataclasses.is_dataclass(options) and not isinstance(options, type)
        values = dataclasses.asdict(options) if is_instance else {}
        overridden = read_overrides(layered).get(device, {})
        return {
            "device": device,
            "kind": configured.kind,
            "enabled": configured.enabled,
            "options": {name: None if is_secret(name) else value for name, value in values.items()},
            "secret": sorted(name for name in values if is_secret(name)),
            "overridden": sorted(overridden),
            "file": str(layered),
        }

    async def configure(self, device: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Set (a value) or reset (None: back to the configuration file's) options of `device`, then reload.

        Every problem with the result is `InvalidArgument` (one per line) and nothing changes.
        Returns the reload's report.
        """
        config_path, layered = self._paths()
        async with self._lock:
            overrides = read_overrides(layered)
            edited = dict(overrides.get(device, {}))
            for name, value in changes.items():
                if value is None:
                    edited.pop(name, None)
                else:
                    edited[name] = value
            new = {**overrides, device: edited}
            if not edited:
                del new[device]
            try:
                text = render(new)
                self._load(config_path, new)
            except ConfigError as error:
                raise InvalidArgument(error_lines(error)) from None
            except (ValueError, TypeError) as error:  # a value TOML cannot hold (a null inside a list)
                raise InvalidArgument(f"configure_device.options: {error}") from None
            _write_atomically(layered, text)
            log.warning("device %s's options changed (%s): %s", device, layered, ", ".join(sorted(changes)))
            return await self._gateway.reloader.reload_op()


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` (readable by its owner only: an option may be a secret)."""
    temporary = path.with_name(path.name + ".tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        temporary.replace(path)
    except OSError as error:
        raise DeviceUnavailable(f"cannot write {path}: {error.strerror or error}") from None
