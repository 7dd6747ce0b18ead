"""Faces of the bus: each translates one wire protocol onto the client core (`gateway.core`)."""
