"""The messages of a recording in log-time order, as the replay device and `hwgateway replay` play them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
    """Every bus message of `path` (not the availability channel), sorted by log time.

    A truncated file gives what its complete chunks hold; raise BadRecording when it is not MCAP.
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
            if channel.topic.startswith("_gateway/"):
                continue
            schema = contents.schemas.get(channel.schema_id)
            type_ = channel.metadata.get("type") or (schema.name if schema else "")
            messages.append(Recorded(channel.topic, type_, message.log_time, message.publish_time, message.data))
    _check_readable(path, contents)
    messages.sort(key=lambda m: m.log_time_ns)
    return messages
