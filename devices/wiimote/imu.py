"""Gyro zeroing at rest and the covariances published with `wiimote/State` (spec §7 "Zeroing").

Like the ROS node: skip `WARMUP` samples, collect `SAMPLES`, and accept the run only when every
axis is steady (standard deviation at most `ACCEL_MAX_STD` accelerometer counts and, with a
MotionPlus, `GYRO_MAX_STD` gyro counts). A success gives the gyro bias (per-axis mean counts) and
the measured per-axis variances, from which the covariances are computed in physical units:

- linear acceleration: var(counts) × (9.80665 m/s² / counts-per-g)² → m²/s⁴ (the factory
  calibration's counts per g on each axis; the ROS nodes omit the division);
- angular velocity: var(counts) × (rad/s per count)² → rad²/s², with the slow-mode scale, since the
  remote rests in slow (low-range) mode.

Before the first success both variances are the quantisation floor (1/12 count²).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

WARMUP = 100
SAMPLES = 100
#: The ROS limit of 1 raw count was in 8-bit counts; ours are 10-bit (4 per 8-bit count).
ACCEL_MAX_STD = 4.0
GYRO_MAX_STD = 50.0
#: Variance of a uniformly quantised reading, in counts².
QUANTISATION_VARIANCE = 1.0 / 12.0


@dataclass(frozen=True, slots=True)
class ZeroingResult:
    """One zeroing run: `ok`, then means and variances per axis (counts, counts²); gyro ones None without M+."""

    ok: bool
    reason: str
    accel_variance: tuple[float, float, float]
    gyro_bias: tuple[float, float, float] | None
    gyro_variance: tuple[float, float, float] | None


class Zeroing:
    """Collects samples at rest after a warm-up; `add` returns the result once enough are in."""

    def __init__(self, warmup: int = WARMUP, samples: int = SAMPLES) -> None:
        self.warmup = warmup
        self.samples = samples
        self.active = False
        self._seen = 0
        self._accel: list[tuple[int, int, int]] = []
        self._gyro: list[tuple[int, int, int]] = []

    def start(self) -> None:
        """Begin a new run (an unfinished one is dropped)."""
        self.active = True
        self._seen = 0
        self._accel.clear()
        self._gyro.clear()

    def add(self, accel: tuple[int, int, int], gyro: tuple[int, int, int] | None) -> ZeroingResult | None:
        """Add one sample; the result after the last one, else None."""
        if not self.active:
            return None
        self._seen += 1
        if self._seen <= self.warmup:
            return None
        self._accel.append(accel)
        if gyro is not None:
            self._gyro.append(gyro)
        if len(self._accel) < self.samples:
            return None
        self.active = False
        return self._result()

    def _result(self) -> ZeroingResult:
        accel_axes = list(zip(*self._accel, strict=True))
        accel_var = tuple(statistics.pvariance(axis) for axis in accel_axes)
        gyro_bias = gyro_var = None
        # A MotionPlus that appeared or vanished mid-run leaves a partial gyro set: not a valid run.
        if self._gyro and len(self._gyro) != len(self._accel):
            return ZeroingResult(False, "the MotionPlus came or went during zeroing", _v3(accel_var), None, None)
        if self._gyro:
            gyro_axes = list(zip(*self._gyro, strict=True))
            gyro_bias = _v3(tuple(statistics.fmean(axis) for axis in gyro_axes))
            gyro_var = _v3(tuple(statistics.pvariance(axis) for axis in gyro_axes))
        worst_accel = max(math.sqrt(v) for v in accel_var)
        if worst_accel > ACCEL_MAX_STD:
            return ZeroingResult(
                False,
                f"accelerometer std {worst_accel:.1f} counts > {ACCEL_MAX_STD}",
                _v3(accel_var),
                gyro_bias,
                gyro_var,
            )
        if gyro_var is not None:
            worst_gyro = max(math.sqrt(v) for v in gyro_var)
            if worst_gyro > GYRO_MAX_STD:
                return ZeroingResult(
                    False, f"gyro std {worst_gyro:.1f} counts > {GYRO_MAX_STD}", _v3(accel_var), gyro_bias, gyro_var
                )
        return ZeroingResult(True, "", _v3(accel_var), gyro_bias, gyro_var)


def _v3(values: tuple[float, ...]) -> tuple[float, float, float]:
    return (values[0], values[1], values[2])


def diagonal(values: tuple[float, float, float]) -> tuple[float, ...]:
    """A 3×3 row-major matrix with `values` on the diagonal."""
    return (values[0], 0.0, 0.0, 0.0, values[1], 0.0, 0.0, 0.0, values[2])
