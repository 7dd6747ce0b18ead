"""How Kortex failures reach the gateway: structured device errors naming the robot's codes."""

from __future__ import annotations

from gateway.errors import DeviceError, RequestTimeout
from protocols.kortex.errors import KortexError


class KortexRequestError(DeviceError):
    """The robot answered a request with an error frame; `error` holds its codes and text."""

    def __init__(self, function: str, error: KortexError) -> None:
        super().__init__(f"robot refused {function}: {error}")
        self.function = function
        self.error = error


class KortexTimeout(RequestTimeout):
    """The robot did not answer a request in time."""


class LinkLost(ConnectionError):
    """A link to the robot closed, failed, or went silent; the adapter reconnects."""
