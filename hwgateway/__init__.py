"""hwgateway for client programs: `hwgateway.client` speaks the gateway's protocol (see docs/client.md).

The daemon itself lives in the `gateway`, `devices` and `protocols` packages of the same distribution.
"""

from gateway import PROTOCOL_VERSION, __version__

__all__ = ["PROTOCOL_VERSION", "__version__"]
