"""FLASH (PKU-Chengxu/FLASH, ``models/timer.py``, state traces as in ``data/state_traces.json``): a
JSON dict ``{guid: {'guid', 'model', 'messages'}}`` whose ``messages`` is lines
``YYYY-mm-dd HH:MM:SS<TAB>state``.  A device is ready (online for FL) while the screen is locked
(``screen_lock`` .. ``screen_unlock``), it is charging (``battery_charged_on`` .. ``_off``) and on
WiFi (``wifi`` .. ``2g|3g|4g|5g|unknown``); other recognised states are ``screen_on``, ``screen_off``
and battery levels ``NN%``.  Times count from 2020-01-02 00:00:00; FLASH maps a simulated time t to
``trace_start + (t - trace_start) mod (trace_end - trace_start)`` (first and last message), so the
ready windows repeat with that period in both directions; we unroll them the same way.  FLASH's own
cache format ``{guid: {'isSuccess', 'trace_start', 'trace_end', 'ready_time': [[start, end], ...]}}``
(``cached_timers.json``) is read too.  An entry FLASH marks unusable (unparseable time, no message
span, no ready window) is skipped, as FLASH re-draws a trace for such a client.  FLASH's hardware
side (per-model training-time lookup tables) is not a per-client trace file and is not imported.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from asyncfl.traces.windows import number

FLASH_EPOCH = datetime(2020, 1, 2)
FLASH_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_FLASH_NETWORK_OFF = {"unknown", "2g", "3g", "4g", "5g"}


def flash_windows(entry: Any) -> tuple[list[tuple[float, float]], float, float] | str:
    """(ready windows, trace_start, trace_end), seconds from 2020-01-02 00:00:00, or why unusable."""
    if isinstance(entry, dict) and "ready_time" in entry:  # FLASH's cached_timers.json
        if not entry.get("isSuccess", True):
            return "isSuccess is false"
        start, end = number(entry.get("trace_start")), number(entry.get("trace_end"))
        if start is None or end is None or int(end - start) <= 0:
            return "no trace span (trace_end <= trace_start)"
        windows = []
        for item in entry["ready_time"] or []:
            s, e = (
                (number(item[0]), number(item[1]))
                if isinstance(item, (list, tuple)) and len(item) == 2
                else (None, None)
            )
            if s is None or e is None:
                return f"ready_time item {item!r} is not a [start, end] pair"
            if s < e:
                windows.append((s, e))
        return (windows, start, end) if windows else "no ready window"
    if not isinstance(entry, dict) or not isinstance(entry.get("messages"), str):
        return "not a dict with a 'messages' string (nor 'ready_time')"
    locked = wifi = charged = False
    ready_since = None
    windows, times = [], []
    for line in entry["messages"].split("\n"):
        if not line.strip():
            continue
        parts = line.strip().split("\t")
        if len(parts) != 2:
            return f"message {line.strip()!r} is not 'time<TAB>state'"
        try:
            t = (datetime.strptime(parts[0].strip(), FLASH_TIME_FORMAT) - FLASH_EPOCH).total_seconds()
        except ValueError:
            return f"time {parts[0].strip()!r} is not YYYY-mm-dd HH:MM:SS"
        state = parts[1].strip().lower()
        times.append(t)
        if state == "battery_charged_on":
            charged = True
        elif state == "battery_charged_off":
            charged = False
        elif state == "wifi":
            wifi = True
        elif state in _FLASH_NETWORK_OFF:
            wifi = False
        elif state == "screen_lock":
            locked = True
        elif state == "screen_unlock":
            locked = False
        elif not (state in ("screen_on", "screen_off") or (state.endswith("%") and number(state[:-1]) is not None)):
            return f"unknown state {parts[1].strip()!r}"  # (screen on/off and battery percentages leave readiness)
        ready = locked and wifi and charged
        if ready and ready_since is None:
            ready_since = t
        elif not ready and ready_since is not None:
            windows.append((ready_since, t))
            ready_since = None
    if not times or int(times[-1] - times[0]) <= 0:
        return "no trace span (first and last message at the same time)"
    merged: list[list[float]] = []
    for s, e in sorted(windows):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    merged = [[s, e] for s, e in merged if s < e]
    if not merged:
        return "no ready window (locked, charging and on WiFi at once)"
    return [(s, e) for s, e in merged], times[0], times[-1]
