"""The face contract: what the app needs of every face's listeners, so it loops over faces instead of wiring each.

A face translates a wire protocol onto the client core; its sessions register in `Hub.sessions`
(closed by the app at shutdown through `FaceSession.close`), and it reaches devices only through
the client core. Its listeners follow this contract.
"""

from __future__ import annotations

import ssl
from typing import Protocol


class Face(Protocol):
    """One face's listeners (or outbound link): start, stop and describe them."""

    #: The face's name in logs.
    name: str
    #: Seconds the app lets `stop` take (beside the clients' close) before leaving it behind; 0: nothing to stop.
    stop_deadline_s: float

    async def start(self, tls: ssl.SSLContext | None) -> None:
        """Listen (with `tls` where the face speaks TLS); `OSError` naming the address when one cannot be bound."""

    def stop_listening(self) -> None:
        """Accept no new connections; live sessions go on until the app closes them."""

    def abort_connections(self) -> None:
        """Drop every connection of this face's listeners at once (a shutdown that ran out of time)."""

    async def cleanup(self) -> None:
        """Release the listeners once the sessions are closed (aborting what is left)."""

    async def stop(self) -> None:
        """Stop what the face runs apart from its listeners' sessions (MQTT: its broker link, saying `offline`).

        The app runs it beside the clients' close, after the devices' safe-state pass began, bounded
        by `stop_deadline_s` through `gateway.waits.finish_within`.
        """

    def listeners(self) -> dict[str, str | None]:
        """Each listener's address by name, as the `listening` log line shows it (None: not listening)."""
