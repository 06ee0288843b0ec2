"""Converting published device traces into asyncfl's plain-CSV trace files.

Two FedScale files (SymbioticLab/FedScale, ``benchmark/dataset/data/device_info/``), both pickles of
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

FLASH (PKU-Chengxu/FLASH, ``models/timer.py``, state traces as in ``data/state_traces.json``): a
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

Clients and trace entries: entries are taken in the order of their sorted keys.  Without
``clients`` client i gets entry i (every usable entry once).  With ``clients`` N, N entries are drawn
with ``numpy.random.default_rng(seed)``: without replacement when the trace has at least N usable
entries, with replacement otherwise.  The mapping is written beside the output as
``<out>.mapping.csv`` (``client,trace_key``) so that the trace files themselves keep the exact
headers the scenario readers require.
"""

from __future__ import annotations

import csv
import json
import math
import pickle
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import numpy as np

from asyncfl.errors import ConfigError

FORMATS = ("fedscale-capacity", "fedscale-behavior", "flash")
DEVICE_HEADER = ("client", "samples_per_s", "uplink_mbps", "downlink_mbps", "latency_s")
AVAILABILITY_HEADER = ("client", "start_s", "end_s")
FLASH_EPOCH = datetime(2020, 1, 2)
FLASH_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass
class Converted:
    header: tuple[str, ...]
    rows: list[tuple]  # in client order
    mapping: list[tuple[int, str]]  # (client, trace key)
    skipped: dict[str, str] = field(default_factory=dict)  # trace key -> why it was left out
    entries: int = 0  # usable trace entries


# ---------------------------------------------------------------- reading the files


# The only globals a trace pickle may name.  FedScale's files hold dicts, lists, ints, floats and strings,
# which pickle writes as opcodes that name no global at all; these few cover other writers of the same
# data (sets, tuples, an OrderedDict or defaultdict, numpy float scalars) and run no code when called.
SAFE_GLOBALS = {
    "builtins": {"dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "str", "bytes", "bool"},
    "collections": {"OrderedDict", "defaultdict"},
    "numpy": {"dtype"},
    "numpy.core.multiarray": {"scalar"},
    "numpy._core.multiarray": {"scalar"},
}
SAFE_GLOBALS["__builtin__"] = SAFE_GLOBALS["builtins"]  # Python 2 pickles (fix_imports maps them)


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global outside :data:`SAFE_GLOBALS`: reading on could run its code."""

    def __init__(self, module: str, name: str):
        super().__init__(f"{module}.{name}")
        self.qualified = f"{module}.{name}"


class TraceUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only :data:`SAFE_GLOBALS`.  A pickle runs whatever callable it
    names when it is read (``__reduce__`` -> ``os.system``, ...), so a plain ``pickle.load`` of a file
    from the internet executes its author's code; this one refuses before calling anything."""

    def find_class(self, module: str, name: str) -> Any:
        if name not in SAFE_GLOBALS.get(module, ()):
            raise RefusedGlobal(module, name)
        return super().find_class(module, name)


def load_pickle(path: Path, what: str) -> dict:
    try:
        with open(path, "rb") as handle:
            data = TraceUnpickler(handle).load()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file: {exc.strerror}.") from None
    except RefusedGlobal as exc:
        allowed = "; ".join(f"{m}: {', '.join(sorted(n))}" for m, n in SAFE_GLOBALS.items() if m != "__builtin__")
        raise ConfigError(
            f"{path}: refused to unpickle the global {exc.qualified}: reading a pickle can run code, so only "
            f"plain data is accepted (allowed globals: {allowed}); expected {what}.  Nothing was executed."
        ) from None
    except Exception as exc:  # noqa: BLE001 - any unpickling problem means "not this format"
        raise ConfigError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc}); expected {what}.") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a non-empty dict {what}, found {type(data).__name__}.")
    return data


def load_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file: {exc.strerror}.") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON file ({exc}); expected {what}.") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a non-empty JSON object {what}, found {type(data).__name__}.")
    return data


def _sorted_keys(data: dict) -> list:
    """Numeric keys in numeric order, then the others as text."""
    return sorted(data, key=lambda k: (0, k, "") if isinstance(k, (int, float)) else (1, 0, str(k)))


def _number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


# ---------------------------------------------------------------- FedScale


def capacity_profile(entry: Any, augmentation: float, kbit_bits: float, latency_s: float) -> tuple | str:
    """(samples_per_s, uplink_mbps, downlink_mbps, latency_s) of one capacity entry, or why it is unusable."""
    if not isinstance(entry, dict) or "computation" not in entry or "communication" not in entry:
        return "not a dict with 'computation' and 'communication'"
    ms, kbps = _number(entry["computation"]), _number(entry["communication"])
    if ms is None or kbps is None or ms <= 0 or kbps <= 0:
        return f"computation {entry['computation']!r} / communication {entry['communication']!r} not both positive"
    mbps = kbps * kbit_bits / 1e6
    return (1000.0 / (augmentation * ms), mbps, mbps, latency_s)


def behavior_windows(entry: Any) -> tuple[list[tuple[float, float]], float] | str:
    """(online windows within one period, period) of one FedScale behaviour entry, or why it is unusable."""
    if not isinstance(entry, dict) or not {"active", "inactive", "finish_time"} <= set(entry):
        return "not a dict with 'active', 'inactive' and 'finish_time'"
    period = _number(entry["finish_time"])
    if period is None or period <= 0:
        return f"finish_time {entry['finish_time']!r} is not a positive number"
    active, inactive = entry["active"], entry["inactive"]
    if not isinstance(active, (list, tuple)) or not isinstance(inactive, (list, tuple)) or len(active) != len(inactive):
        return "'active' and 'inactive' are not lists of the same length"
    windows = []
    for a, b in zip(active, inactive):
        start, end = _number(a), _number(b)
        if start is None or end is None:
            return f"window {a!r}..{b!r} is not numeric"
        start, end = max(start, 0.0), min(end, period)
        if start < end:
            windows.append((start, end))
    if not windows:
        return "no online window of positive length"
    return windows, period


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


# ---------------------------------------------------------------- FLASH

_FLASH_NETWORK_OFF = {"unknown", "2g", "3g", "4g", "5g"}


def flash_windows(entry: Any) -> tuple[list[tuple[float, float]], float, float] | str:
    """(ready windows, trace_start, trace_end), seconds from 2020-01-02 00:00:00, or why unusable."""
    if isinstance(entry, dict) and "ready_time" in entry:  # FLASH's cached_timers.json
        if not entry.get("isSuccess", True):
            return "isSuccess is false"
        start, end = _number(entry.get("trace_start")), _number(entry.get("trace_end"))
        if start is None or end is None or int(end - start) <= 0:
            return "no trace span (trace_end <= trace_start)"
        windows = []
        for item in entry["ready_time"] or []:
            s, e = (
                (_number(item[0]), _number(item[1]))
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
        elif not (state in ("screen_on", "screen_off") or (state.endswith("%") and _number(state[:-1]) is not None)):
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


# ---------------------------------------------------------------- conversion


def _usable(data: dict, parse: Callable[[Any], Any]) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    usable, skipped = [], {}
    for key in _sorted_keys(data):
        parsed = parse(data[key])
        if isinstance(parsed, str):
            skipped[str(key)] = parsed
        else:
            usable.append((str(key), parsed))
    return usable, skipped


def assign(entries: int, clients: int | None, seed: int) -> list[int]:
    """Trace entry index per client (see the module docstring)."""
    if clients is None:
        return list(range(entries))
    rng = np.random.default_rng(seed)
    return [int(i) for i in rng.choice(entries, size=clients, replace=clients > entries)]


def convert(
    fmt: str,
    path: Path,
    clients: int | None = None,
    seed: int = 0,
    horizon_s: float = 7 * 86400.0,
    augmentation: float = 3.0,
    kbit_bits: float = 1024.0,
    latency_s: float = 0.0,
) -> Converted:
    """Read ``path`` in format ``fmt`` and return the rows of the asyncfl trace it becomes."""
    if fmt == "fedscale-capacity":
        data = load_pickle(path, "{client_id: {'computation': ms per sample, 'communication': kbit/s}}")
        usable, skipped = _usable(data, lambda e: capacity_profile(e, augmentation, kbit_bits, latency_s))
        header = DEVICE_HEADER
    elif fmt == "fedscale-behavior":
        data = load_pickle(path, "{client_id: {'active': [...], 'inactive': [...], 'finish_time': s, ...}}")
        usable, skipped = _usable(data, behavior_windows)
        header = AVAILABILITY_HEADER
    elif fmt == "flash":
        data = load_json(path, "{guid: {'messages': 'time<TAB>state lines', ...}}")
        usable, skipped = _usable(data, flash_windows)
        header = AVAILABILITY_HEADER
    else:
        raise ConfigError(f"--from {fmt!r}: allowed: {', '.join(FORMATS)}.")
    if not usable:
        reasons = "; ".join(f"{k}: {why}" for k, why in list(skipped.items())[:3])
        raise ConfigError(f"{path}: no usable {fmt} entry ({len(skipped)} entries, e.g. {reasons}).")
    chosen = assign(len(usable), clients, seed)
    rows: list[tuple] = []
    mapping = []
    for client, index in enumerate(chosen):
        key, parsed = usable[index]
        mapping.append((client, key))
        if fmt == "fedscale-capacity":
            rows.append((client, *parsed))
        elif fmt == "fedscale-behavior":
            windows, period = parsed
            rows += [(client, s, e) for s, e in unroll(windows, period, horizon_s)]
        else:
            windows, start, end = parsed
            period = float(int(end - start))  # FLASH takes the period as a whole number of seconds
            rows += [(client, s, e) for s, e in unroll(windows, period, horizon_s)]
    return Converted(header, rows, mapping, skipped, len(usable))


def mapping_path(out: Path) -> Path:
    return out.with_name(out.stem + ".mapping.csv")


def write_converted(result: Converted, out: Path) -> list[Path]:
    """Write the trace CSV and its ``.mapping.csv``; numbers with repr precision (exact round trip)."""
    side = mapping_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(result.header)
            writer.writerows(tuple(_text(v) for v in row) for row in result.rows)
        with open(side, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(("client", "trace_key"))
            writer.writerows(result.mapping)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot write the file: {exc.strerror}.") from None
    return [out, side]


def _text(value: Any) -> str:
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value)
