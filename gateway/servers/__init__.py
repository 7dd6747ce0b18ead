"""Network front ends: HTTP + WebSocket (JSON) and the msgpack stream socket (TCP and Unix)."""
