"""The per-client columns of a run, aggregated for its figures with numpy group-bys (one pass over a
column per statistic, never a Python loop over clients): at 10^6 clients the figures cost what
drawing a few hundred artists costs, not what reading and scattering a million rows does.

``speed_groups``    clients grouped by speed (tiers or quintiles): a group label per client
``group_sums``      a column summed per group (``np.bincount`` with weights)
``group_means``     a column's mean per group
``visible_points``  the dots of a scatter that are not hidden under a later dot of the same pixel
"""

from __future__ import annotations

import numpy as np

SCATTER_ALL_UP_TO = 20_000  # clients whose every dot is drawn; above, only the visible ones
PIXEL_COLUMNS = 2048  # x positions a dot can take in a thinned scatter: ~3 per pixel of a 12-inch figure


def speed_groups(speed: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Clients grouped by speed, slowest first: one group per distinct speed when there are at most
    five (speed tiers), speed quintiles otherwise (``np.array_split`` of the stable speed order:
    the first ``n % 5`` groups one client larger).  Returns each client's group (0 .. groups-1)
    and the groups' tick labels (range and size)."""
    distinct, tier = np.unique(speed, return_inverse=True)
    if len(distinct) <= 5:
        labels = tier.reshape(-1).astype(np.int64)
        sizes = np.bincount(labels, minlength=len(distinct))
        names = [f"{v:g}" for v in distinct]
    else:
        order = np.argsort(speed, kind="stable")
        sizes = np.array([len(part) for part in np.array_split(order, 5)])
        labels = np.empty(len(speed), dtype=np.int64)
        labels[order] = np.repeat(np.arange(5), sizes)
        ends = np.cumsum(sizes)
        ranked = speed[order]  # group g holds ranked[ends[g] - sizes[g]: ends[g]]
        names = [f"{speed_label(ranked[e - s])} to {speed_label(ranked[e - 1])}" for s, e in zip(sizes, ends)]
    return labels, [f"{name}\n{size:,} clients" for name, size in zip(names, sizes)]


def group_sums(labels: np.ndarray, values, groups: int) -> np.ndarray:
    """``values`` summed per group (``labels`` from :func:`speed_groups`), as floats."""
    return np.bincount(labels, weights=np.asarray(values, dtype=np.float64), minlength=groups)


def group_means(labels: np.ndarray, values, groups: int) -> np.ndarray:
    """``values``' mean per group (NaN for an empty group)."""
    sizes = np.bincount(labels, minlength=groups).astype(np.float64)
    sums = group_sums(labels, values, groups)
    return np.divide(sums, sizes, out=np.full(groups, np.nan), where=sizes > 0)


def visible_points(x: np.ndarray, y: np.ndarray, columns: int = PIXEL_COLUMNS, log_x: bool = True) -> np.ndarray:
    """Indices (in drawing order) of the dots of a scatter that no later dot covers: dots are drawn
    in index order, so of the dots that fall in one of ``columns`` equal slices of the x range (of
    log x with ``log_x``) at one exact y, only the last is seen.  Drawing those (and the dots of the
    least and largest x, so that the axis spans the same range) gives the same picture from a few
    thousand dots instead of 10^6; every dot drawn is a client's own values."""
    n = len(x)
    if n == 0:
        return np.arange(0)
    position = np.log(x) if log_x else np.asarray(x, dtype=np.float64)
    lo, hi = float(position.min()), float(position.max())
    column = np.zeros(n, dtype=np.int64)
    if hi > lo:
        column = np.minimum(((position - lo) / (hi - lo) * columns).astype(np.int64), columns - 1)
    _, row = np.unique(y, return_inverse=True)
    key = row.reshape(-1).astype(np.int64) * columns + column
    _, first_from_end = np.unique(key[::-1], return_index=True)
    ends = [int(np.argmin(position)), int(np.argmax(position))]  # drawn too: the axis spans the same range
    return np.union1d(n - 1 - first_from_end, ends)


def speed_label(v: float) -> str:
    """A speed as a short tick label: 0.5, 12, 1.5k."""
    return f"{v / 1000:.3g}k" if v >= 1000 else f"{v:.3g}" if v < 10 else f"{v:.0f}"
