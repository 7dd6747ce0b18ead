"""The Aseba event name a `<device>/node/<n>/events/<segment>` topic carries, for EventsEmitted.

The aseba adapter writes each event name as one topic segment (`gateway.topics.name_segment`): any
name short enough comes back from the segment alone; a name too long for a topic is found again
among the events of the program on that node (its `node/<n>/description`), which lists them all.
"""

from __future__ import annotations

from gateway.bus import Bus
from gateway.topics import name_segment, segment_name


def event_name(bus: Bus, topic: str) -> str:
    """The event name of `topic` (an `.../node/<n>/events/<segment>` topic); the segment when unknown."""
    node, segment = topic.rsplit("/events/", 1)
    name = segment_name(segment)
    if name != segment or ":" not in segment:
        return name
    description = bus.latest(f"{node}/description")
    events = getattr(description.message, "events", ()) if description is not None else ()
    for candidate in events:
        if candidate and name_segment(candidate) == segment:
            return str(candidate)
    return segment
