"""Our own client protocol (docs/protocol.md) over WebSocket JSON and the msgpack socket."""
