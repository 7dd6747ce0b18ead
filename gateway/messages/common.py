"""Standard ROS building blocks shared by the seed messages (ROS 2 field names)."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import F64, STR, Int, Nested, structure

_NANOSEC = Int(32, False, maximum=999_999_999)


@structure
class Time:
    """builtin_interfaces/Time: seconds since the Unix epoch, split into `sec` and `nanosec`."""

    sec: Annotated[int, Int(32)] = 0
    nanosec: Annotated[int, _NANOSEC] = 0

    @classmethod
    def from_seconds(cls, seconds: float) -> Time:
        """Split a float of seconds since the epoch."""
        # `seconds - whole` is exact, as `math.modf`'s fraction is, and a call less per sample.
        whole = int(seconds)
        nanos = round((seconds - whole) * 1e9)
        if nanos >= 1_000_000_000:
            return cls(whole + 1, 0)
        return cls(whole, nanos)

    def to_seconds(self) -> float:
        """Seconds since the epoch as a float."""
        return self.sec + self.nanosec * 1e-9


@structure
class Duration:
    """builtin_interfaces/Duration: a span of `sec` seconds plus `nanosec` nanoseconds."""

    sec: Annotated[int, Int(32)] = 0
    nanosec: Annotated[int, _NANOSEC] = 0

    def to_seconds(self) -> float:
        """The span in seconds."""
        return self.sec + self.nanosec * 1e-9


@structure
class Header:
    """std_msgs/Header: acquisition time `stamp` and the coordinate `frame_id`."""

    stamp: Annotated[Time, Nested(Time)] = Time()
    frame_id: Annotated[str, STR] = ""


@structure
class Vector3:
    """geometry_msgs/Vector3: a 3-vector; the unit is the field's."""

    x: Annotated[float, F64] = 0.0
    y: Annotated[float, F64] = 0.0
    z: Annotated[float, F64] = 0.0
