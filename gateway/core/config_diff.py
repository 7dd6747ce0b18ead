"""What differs between two configurations, section by section: the plan of a reload (`gateway/reload.py`).

Generic over the sections of `Config`: every field of `Config` is a section, compared by value
(the config dataclasses are frozen, so `==` compares every key). A section that is a dataclass is
compared key by key, so a reload can say which keys changed (`server.http_port`); any other
section (a tuple, a mapping) is reported whole. `[devices.<id>]` is compared device by device.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gateway.core.config import Config, DeviceConfig

#: Config field names that are spelt otherwise in the TOML file.
_TOML_KEYS = {"import_": "import", "credentials": "tokens"}


@dataclass(frozen=True, slots=True)
class DevicesDiff:
    """The enabled devices of two configs, by id: what a reload starts, stops, restarts and leaves alone.

    A device that is disabled (`enabled = false`) counts as absent, as it does for the supervisor.
    """

    added: tuple[DeviceConfig, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[DeviceConfig, ...] = ()
    unchanged: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """True when no device starts, stops or restarts."""
        return not (self.added or self.removed or self.changed)


def diff_devices(old: Iterable[DeviceConfig], new: Iterable[DeviceConfig]) -> DevicesDiff:
    """Compare the enabled devices of two configs by id (kind, options and `ros_namespace` alike: unchanged)."""
    before = {device.id: device for device in old if device.enabled}
    after = {device.id: device for device in new if device.enabled}
    return DevicesDiff(
        added=tuple(device for key, device in after.items() if key not in before),
        removed=tuple(key for key in before if key not in after),
        changed=tuple(device for key, device in after.items() if key in before and before[key] != device),
        unchanged=tuple(key for key, device in after.items() if before.get(key) == device),
    )


def changed_keys(section: str, old: Any, new: Any) -> list[str]:
    """The dotted TOML paths of what differs between two values of one section (empty: nothing)."""
    if old == new:
        return []
    if dataclasses.is_dataclass(old) and type(old) is type(new):
        return [
            f"{section}.{_TOML_KEYS.get(field.name, field.name)}"
            for field in dataclasses.fields(old)
            if getattr(old, field.name) != getattr(new, field.name)
        ]
    return [section]


def changed_sections(old: Config, new: Config) -> dict[str, list[str]]:
    """Every section of `Config` whose value differs, with its changed keys, in the order of `Config`'s fields."""
    changes = {}
    for field in dataclasses.fields(Config):
        keys = changed_keys(field.name, getattr(old, field.name), getattr(new, field.name))
        if keys:
            changes[field.name] = keys
    return changes
