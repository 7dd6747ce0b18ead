"""Kinova Kortex wire protocol (TCP 10000 / UDP 10001), sans-I/O.

Layers, lowest first: `framing` (the TCP splitter: 8-byte magic, big-endian length; UDP datagrams
carry one frame bare), `header` (the four bit-packed header words), `frame` (the `Frame` protobuf
envelope), `errors` (error codes and sub-codes by name), `services` (service and function ids),
`router` (message ids, the session id and the classification of incoming frames). The protobuf
classes are generated into `generated/` by scripts/gen-kortex-protos.py from `proto/`.
Facts and sources: the shared protocol notes, specs/kortex.md.
"""
