"""The life of one face session, one value instead of scattered booleans."""

from __future__ import annotations

import enum


class SessionState(enum.Enum):
    """Where a session is: each state only ever moves to a later one."""

    #: Connected; not yet admitted (authenticated, or past the face's handshake): its deadline runs.
    OPENING = "opening"
    #: Admitted: requests are handled.
    OPEN = "open"
    #: Saying goodbye: what the client sends is no longer handled.
    CLOSING = "closing"
    #: Forgotten by the hub: its subscriptions, locks and leases are gone.
    CLOSED = "closed"
