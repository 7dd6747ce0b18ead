"""Whether the ROS 2 face can run here: the `ros2` extra (`cyclonedds`) and its C library must load.

The gateway starts without it and reports the face unavailable, with this reason, in its log and on
`/healthz` (docs/ros2.md: on aarch64 there is no wheel; build it against Debian's Cyclone DDS).
"""

from __future__ import annotations

import importlib
import platform

#: The extra that brings the face's dependency (`pip install 'hwgateway[ros2]'`).
EXTRA = "ros2"


def unavailable_reason(module: str = "cyclonedds") -> str | None:
    """None when `module` (the DDS binding) imports with its C library, else why not, with what to do."""
    try:
        importlib.import_module(f"{module}.domain")
    except ImportError as error:
        hint = (
            "no wheel exists for this machine: build it against Debian's Cyclone DDS (docs/ros2.md)"
            if platform.machine() not in ("x86_64", "AMD64")
            else f"install the extra: pip install 'hwgateway[{EXTRA}]'"
        )
        return f"the Python package {module} cannot be imported ({error}); {hint}"
    except OSError as error:  # the package is there, its C library (libddsc) is not loadable
        return f"the Cyclone DDS C library cannot be loaded ({error}); see docs/ros2.md"
    return None
