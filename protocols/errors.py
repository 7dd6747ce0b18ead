"""The one error every codec raises on hostile or malformed input."""


class ProtocolError(ValueError):
    """Input bytes break the wire protocol; the message names the rule or the limit broken."""
