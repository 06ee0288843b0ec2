"""Online windows that repeat with a period, unrolled over a horizon (FedScale's behaviour trace and
FLASH's ready windows alike)."""

from __future__ import annotations

import math
from typing import Any


def number(value: Any) -> float | None:
    """``value`` as a finite float, or None (a trace field that is not a usable number)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def unroll(windows: list[tuple[float, float]], period: float, horizon: float) -> list:
    """Online intervals over [0, horizon) of windows that repeat with ``period``: a window (s, e) is
    online at every s + k period .. e + k period (integer k).  Sorted, merged; a client whose first
    online time is at or after the horizon gets that one window (the readers need one interval per
    client)."""
    out: list[list[float]] = []
    shifted = []
    for s, e in windows:
        k = math.floor(-e / period)  # the earliest repetition that can reach t >= 0
        while s + k * period < horizon:
            lo, hi = max(s + k * period, 0.0), min(e + k * period, horizon)
            if lo < hi:
                shifted.append((lo, hi))
            k += 1
    for lo, hi in sorted(shifted):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    if not out:  # first online at or after the horizon: keep that one window
        starts = [(s + math.ceil(-s / period) * period, e - s) for s, e in windows]
        lo, length = min(starts)
        out = [[lo, lo + length]]
    return [(lo, hi) for lo, hi in out]
