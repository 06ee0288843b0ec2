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


# The most window repetitions one trace entry may unroll into over the horizon: the work (and the rows
# written) grow as horizon / period x windows, so a period of microseconds would take days; 100,000 is
# a window every 6 s over the default week, far more than a published trace holds.
MAX_REPETITIONS = 100_000


def _merged(windows: list[tuple[float, float]]) -> list[list[float]]:
    out: list[list[float]] = []
    for lo, hi in sorted(windows):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def _always_online(windows: list[tuple[float, float]], period: float) -> bool:
    """One merged window spans a whole period: online at every time, whatever the period."""
    return any(hi - lo >= period for lo, hi in _merged(windows))


def repetitions(windows: list[tuple[float, float]], period: float, horizon: float) -> float:
    """How many window copies :func:`unroll` walks over [0, horizon) (1 when always online); a float,
    inf for a period too small to divide by."""
    if _always_online(windows, period):
        return 1.0
    return sum((horizon - s + e) / period + 1.0 for s, e in windows)  # a float: inf past the largest


def unroll_problem(windows: list[tuple[float, float]], period: float, horizon: float) -> str | None:
    """Why unrolling these windows over the horizon is refused (more than :data:`MAX_REPETITIONS`), or None."""
    count = repetitions(windows, period, horizon)
    if count <= MAX_REPETITIONS:
        return None
    return (
        f"its {len(windows):,} online window(s) repeat every {period:g} s, {count:,.3g} window copies over "
        f"--horizon {horizon:g} s (at most {MAX_REPETITIONS:,} per entry; a shorter --horizon unrolls fewer)"
    )


def unroll(windows: list[tuple[float, float]], period: float, horizon: float) -> list:
    """Online intervals over [0, horizon) of windows that repeat with ``period``: a window (s, e) is
    online at every s + k period .. e + k period (integer k).  Sorted, merged; a client whose first
    online time is at or after the horizon gets that one window (the readers need one interval per
    client).  Windows covering a whole period give [0, horizon) at once; more than
    :data:`MAX_REPETITIONS` copies raise ValueError (:func:`unroll_problem` says why first)."""
    if _always_online(windows, period):
        return [(0.0, horizon)]
    problem = unroll_problem(windows, period, horizon)
    if problem is not None:
        raise ValueError(problem)
    shifted = []
    for s, e in windows:
        k = math.floor(-e / period)  # the earliest repetition that can reach t >= 0
        while s + k * period < horizon:
            lo, hi = max(s + k * period, 0.0), min(e + k * period, horizon)
            if lo < hi:
                shifted.append((lo, hi))
            k += 1
    out = _merged(shifted)
    if not out:  # first online at or after the horizon: keep that one window
        starts = [(s + math.ceil(-s / period) * period, e - s) for s, e in windows]
        lo, length = min(starts)
        out = [[lo, lo + length]]
    return [(lo, hi) for lo, hi in out]
