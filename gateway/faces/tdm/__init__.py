"""The Thymio Device Manager face: Thymio Suite's protocol (and tdmclient's) over TCP and WebSocket."""
