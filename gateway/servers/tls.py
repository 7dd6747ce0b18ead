"""TLS for the TCP listeners (HTTP/WebSocket and msgpack), from `server.tls_cert` and `server.tls_key`."""

from __future__ import annotations

import ssl

from gateway.core.config import ServerConfig


def server_context(server: ServerConfig) -> ssl.SSLContext | None:
    """A TLS 1.2+ server context with the configured certificate chain and key; None when TLS is off.

    Raises `OSError` naming the files when they cannot be loaded (the gateway then exits 1).
    """
    if not server.tls_cert:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(server.tls_cert, server.tls_key)
    except (OSError, ssl.SSLError) as error:
        raise OSError(f"TLS certificate {server.tls_cert} / key {server.tls_key}: {error}") from None
    return context
