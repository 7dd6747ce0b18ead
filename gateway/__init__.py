"""hwgateway: robot and controller hardware on one bus, served over WebSocket (JSON) and msgpack."""

__version__ = "0.1.0"

#: Version of the client protocol spoken on /ws and on the msgpack socket.
PROTOCOL_VERSION = 1
