"""A node description stored as JSON: the description frames a node sends, as captured.

Format: a JSON list of ``[message type, payload as hex]`` pairs — one Description (0x9000), then
its NamedVariableDescription (0x9001), LocalEventDescription (0x9002) and
NativeFunctionDescription (0x9003) frames, in the order the node sent them
(e.g. ``tests/data/thymio-playground-description.json``, the playground's Thymio II).
"""

from __future__ import annotations

import json

from protocols.aseba.description import DescriptionAssembler, NodeDescription
from protocols.aseba.framing import Frame
from protocols.aseba.messages import (
    Description,
    LocalEventDescription,
    NamedVariableDescription,
    NativeFunctionDescription,
    decode,
)
from protocols.errors import ProtocolError


def load_description(text: str) -> NodeDescription:
    """The node description in JSON `text`; `ProtocolError` when it is malformed or incomplete."""
    try:
        frames = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProtocolError(f"the description is not JSON: {error}") from None
    if not isinstance(frames, list):
        raise ProtocolError("the description must be a JSON list of [type, hex payload] pairs")
    assembler = DescriptionAssembler()
    for index, frame in enumerate(frames):
        if not (
            isinstance(frame, list) and len(frame) == 2 and isinstance(frame[0], int) and isinstance(frame[1], str)
        ):
            raise ProtocolError(f"description frame {index} is not a [type, hex payload] pair")
        try:
            payload = bytes.fromhex(frame[1])
        except ValueError:
            raise ProtocolError(f"description frame {index} has a payload that is not hex") from None
        part = decode(Frame(1, frame[0], payload))
        if not isinstance(
            part, Description | NamedVariableDescription | LocalEventDescription | NativeFunctionDescription
        ):
            raise ProtocolError(f"description frame {index} (type 0x{frame[0]:04X}) is not part of a description")
        assembler.add(part)
    return assembler.result()
