"""The messages of a recording in log-time order, as the replay device and `hwgateway replay` play them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.record.recover import BadRecording, Contents, _check_readable, _stream


@dataclass(frozen=True, slots=True)
class Recorded:
    """One recorded message: topic, type (the channel's `type` metadata or schema name), times, JSON."""

    topic: str
    type: str
    log_time_ns: int
    publish_time_ns: int
    data: bytes


def load(path: str | Path) -> list[Recorded]:
    """Every bus message of `path` (not the gateway's own channels), sorted by log time.

    A truncated file gives what its complete chunks hold; raise BadRecording when it is not MCAP.
    """
    return load_recording(path)[0]


def recorded_devices(contents: Contents) -> list[dict[str, Any]]:
    """The devices the recording's `hwgateway` metadata lists (id, kind, publishes, accepts); [] without it."""
    for metadata in contents.metadata:
        if metadata.name == "hwgateway":
            try:
                devices = json.loads(metadata.metadata.get("devices", "[]"))
            except ValueError:
                return []
            return [d for d in devices if isinstance(d, dict) and isinstance(d.get("id"), str)]
    return []


def load_recording(path: str | Path, keep: frozenset[str] = frozenset()) -> tuple[list[Recorded], list[dict[str, Any]]]:
    """The bus messages of `path` in log-time order and the recorded devices (see `load`).

    `keep`: gateway channels (`_gateway/...` topics) to return among the messages too.
    """
    contents = Contents()
    messages: list[Recorded] = []
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as error:
        raise BadRecording(f"{path}: {error.strerror}") from None
    with file:
        for message in _stream(file, contents):
            channel = contents.channels[message.channel_id]
            if channel.topic.startswith("_gateway/") and channel.topic not in keep:
                continue
            schema = contents.schemas.get(channel.schema_id)
            type_ = channel.metadata.get("type") or (schema.name if schema else "")
            messages.append(Recorded(channel.topic, type_, message.log_time, message.publish_time, message.data))
    _check_readable(path, contents)
    messages.sort(key=lambda m: m.log_time_ns)
    return messages, recorded_devices(contents)
