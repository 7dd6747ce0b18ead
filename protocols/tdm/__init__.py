"""The Thymio Device Manager (TDM) protocol: flatbuffer messages, TCP framing, flexbuffer values.

Written from the message layout of Mobsya's `thymio.fbs` (field order and types only; no schema
text or generated code is included) with the official `flatbuffers` runtime.
"""
