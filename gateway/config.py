"""Reading the configuration file with everything this gateway is built with (part of the composition root).

`gateway.core.config` reads the file; this module hands it what the core must not import: the
device kinds of `devices/` and the checks the faces make of their own keys. Use `load` and `loads`
wherever a real configuration is read (the daemon, `check-config`, tests).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devices.registry import KINDS
from gateway.core import config as core_config
from gateway.core.config import Config, Extensions
from gateway.core.config_overrides import Overrides
from gateway.faces.ros2 import config_check as ros2_config
from gateway.faces.rosbridge import names as rosbridge_names

#: The device kinds and the faces' config checks of this gateway.
EXTENSIONS = Extensions(KINDS, checks=(rosbridge_names.check_config, ros2_config.check_config))


def parse(document: dict[str, Any]) -> Config:
    """Build a `Config` from a parsed TOML document; raise one `ConfigError` listing every problem."""
    return core_config.parse(document, EXTENSIONS)


def loads(text: str) -> Config:
    """Parse TOML text into a `Config`."""
    return core_config.loads(text, EXTENSIONS)


def load(path: str | Path, overrides: Overrides | None = None) -> Config:
    """Read and parse the configuration file at `path`, with its device overrides (or `overrides`) over it."""
    return core_config.load(path, EXTENSIONS, overrides)
