"""Hypothesis budgets for the decoder fuzz targets: a few seconds each in `make test`, longer in `make fuzz`.

`make fuzz` sets HWGW_FUZZ_SCALE (default there: 50) to multiply every target's example count.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings


def fuzz_settings(examples: int) -> settings:
    """Settings of one fuzz target: `examples` runs in `make test`, times HWGW_FUZZ_SCALE in `make fuzz`."""
    scale = max(1, int(os.environ.get("HWGW_FUZZ_SCALE", "1")))
    return settings(
        max_examples=examples * scale, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
    )
