"""The ROS 2 face as a face of the contract (`gateway.faces.contract.Face`), so the app wires it like the others.

It listens on no port: it joins a DDS domain. Its start checks that the `ros2` extra can run here
(`availability`); when it cannot, the gateway runs on without it and the face says why, once in the
log and on `/healthz` (`health()`: `available` false with the `reason`). Cyclone DDS is imported
only then, so a gateway without the extra never loads it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gateway.core.client import Hub
from gateway.core.config import Ros2Config
from gateway.faces.ros2.availability import unavailable_reason
from gateway.ros.names import RosNames

if TYPE_CHECKING:
    from gateway.faces.ros2.graph import Ros2Graph

log = logging.getLogger(__name__)


class Ros2Face:
    """The face contract over one `Ros2Graph` (made at `start`, when the extra is there)."""

    name = "ROS 2 face"
    #: Deleting the participant is synchronous and quick; the stop has nothing to wait for.
    stop_deadline_s = 1.0

    def __init__(
        self,
        hub: Hub,
        config: Ros2Config,
        names: RosNames,
        status: Callable[[], dict[str, Any]],
        module: str = "cyclonedds",
    ) -> None:
        self.hub = hub
        self.config = config
        self.names = names
        self._status = status
        self._module = module
        self.graph: Ros2Graph | None = None
        #: Why the face is not running (None while it runs or before `start`).
        self.reason: str | None = None

    async def start(self, tls: ssl.SSLContext | None) -> None:
        """Join the DDS domain, or say why the face cannot (the gateway starts either way; `tls`: unused)."""
        self.reason = unavailable_reason(self._module)
        if self.reason is not None:
            log.warning("the ROS 2 face is unavailable: %s", self.reason)
            return
        from gateway.faces.ros2.graph import Ros2Graph  # only with the extra installed

        try:
            self.graph = Ros2Graph(self.hub, self.config, self.names, self._status, asyncio.get_running_loop())
        except Exception as error:  # Cyclone refused the domain (a bad interface name, a domain id in use)
            self.reason = f"DDS domain {self.config.domain_id} cannot be joined: {error}"
            log.error("the ROS 2 face is unavailable: %s", self.reason)
            return
        self.graph.start()
        log.info(
            "ROS 2 face on DDS domain %d (interfaces %s) as node /%s",
            self.config.domain_id,
            ",".join(self.config.interfaces),
            self.config.node_name,
        )

    def stop_listening(self) -> None:
        """Nothing: DDS accepts no connections (the participant leaves in `stop`)."""

    def abort_connections(self) -> None:
        """Nothing: no connections of our own."""

    async def cleanup(self) -> None:
        """Nothing: no listener to release."""

    async def stop(self) -> None:
        """Leave the domain: end every command lease and delete the participant."""
        if self.graph is not None:
            self.graph.stop()
            self.graph = None

    def listeners(self) -> dict[str, str | None]:
        """None: the face joins a DDS domain instead of listening."""
        return {}

    def health(self) -> dict[str, Any]:
        """What `/healthz` shows: `available`, and the counters while running or the `reason` when not."""
        if self.graph is not None:
            return self.graph.health()
        return {"available": False, "reason": self.reason or "not started"}
