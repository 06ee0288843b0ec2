"""Two FedScale files (SymbioticLab/FedScale, ``benchmark/dataset/data/device_info/``), both pickles of
a dict keyed by client id:

``client_device_capacity``  ``{id: {'computation': ms per sample, 'communication': kbit/s}}``
    FedScale (``fedscale/cloud/internal/client_metadata.py``, ``get_completion_time``) takes the
    training time of a task as ``augmentation_factor * batch_size * local_steps * computation / 1000``
    seconds (``augmentation_factor`` 3: a backward pass costs about twice the inference that
    ``computation`` measures) and the transfer time as ``(upload + download kbit) / communication``,
    with the model size counted in kbit as ``bytes / 1024 * 8``
    (``fedscale/cloud/aggregation/aggregator.py``; FedScale issue 9 asks why 1024 and not 1000).
    So we convert ``samples_per_s = 1000 / (augmentation * computation)`` and
    ``uplink_mbps = downlink_mbps = communication * kbit_bits / 1e6`` with ``kbit_bits = 1024`` by
    default: a client then needs the same seconds for the same model bytes as in FedScale.  FedScale
    has no latency (``latency_s`` is an option, 0 by default) and one bandwidth for both directions.

``client_behave_trace``  ``{id: {'duration', 'inactive': [...], 'active': [...], 'finish_time', 'model'}}``
    ``ClientMetadata.is_active`` says a client is online when ``active[i] <= t % finish_time <=
    inactive[i]`` for its current window i: ``active`` holds the start times (seconds) of the online
    windows, ``inactive`` the start times of the following offline periods, and the whole pattern
    repeats with period ``finish_time``.  We unroll it over ``[0, horizon)``: every window shifted by
    every multiple of ``finish_time``, clipped to the horizon, merged where windows touch.  (FedScale
    walks its window index forward one step per query, which can skip windows when queries are far
    apart; we take the union of the windows, which is what the trace describes.)
"""

from __future__ import annotations

from typing import Any

from asyncfl.traces.windows import number


def capacity_profile(entry: Any, augmentation: float, kbit_bits: float, latency_s: float) -> tuple | str:
    """(samples_per_s, uplink_mbps, downlink_mbps, latency_s) of one capacity entry, or why it is unusable."""
    if not isinstance(entry, dict) or "computation" not in entry or "communication" not in entry:
        return "not a dict with 'computation' and 'communication'"
    ms, kbps = number(entry["computation"]), number(entry["communication"])
    if ms is None or kbps is None or ms <= 0 or kbps <= 0:
        return f"computation {entry['computation']!r} / communication {entry['communication']!r} not both positive"
    mbps = kbps * kbit_bits / 1e6
    return (1000.0 / (augmentation * ms), mbps, mbps, latency_s)


def behavior_windows(entry: Any) -> tuple[list[tuple[float, float]], float] | str:
    """(online windows within one period, period) of one FedScale behaviour entry, or why it is unusable."""
    if not isinstance(entry, dict) or not {"active", "inactive", "finish_time"} <= set(entry):
        return "not a dict with 'active', 'inactive' and 'finish_time'"
    period = number(entry["finish_time"])
    if period is None or period <= 0:
        return f"finish_time {entry['finish_time']!r} is not a positive number"
    active, inactive = entry["active"], entry["inactive"]
    if not isinstance(active, (list, tuple)) or not isinstance(inactive, (list, tuple)) or len(active) != len(inactive):
        return "'active' and 'inactive' are not lists of the same length"
    windows = []
    for a, b in zip(active, inactive):
        start, end = number(a), number(b)
        if start is None or end is None:
            return f"window {a!r}..{b!r} is not numeric"
        start, end = max(start, 0.0), min(end, period)
        if start < end:
            windows.append((start, end))
    if not windows:
        return "no online window of positive length"
    return windows, period
