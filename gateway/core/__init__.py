"""The protocol-free client core every face of the bus is built on (see `gateway.core.client`)."""
