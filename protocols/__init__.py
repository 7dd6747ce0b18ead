"""Sans-I/O wire codecs: bytes in, typed messages out, and back. No sockets, no clocks."""
