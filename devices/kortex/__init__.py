"""Kinova Kortex arms (Gen3 / Gen3 lite on Kortex 2, Link 6 on Kortex 3) over TCP 10000 and UDP 10001.

`connection` runs one link (its session, keep-alive, RPCs and notifications) over the thin
transports in `transport`; `cyclic` runs the BaseCyclic loop on the UDP link; `convert` turns
protobuf feedback into bus messages; `adapter` ties them to the gateway.
"""
