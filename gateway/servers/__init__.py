"""What every face's listeners are built on; imports no face.

The HTTP port and its guard, WebSocket upgrades and Origin checks, connection limits, Host checks,
TLS, stream listeners and socket transports.
"""
