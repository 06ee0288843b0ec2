"""Converting published device traces (FedScale: :mod:`.fedscale`, FLASH: :mod:`.flash`) into asyncfl's
plain-CSV trace files (``asyncfl traces convert``).

Clients and trace entries: entries are taken in the order of their sorted keys.  Without
``clients`` client i gets entry i (every usable entry once).  With ``clients`` N, N entries are drawn
with ``numpy.random.default_rng(seed)``: without replacement when the trace has at least N usable
entries, with replacement otherwise.  The mapping is written beside the output as
``<out>.mapping.csv`` (``client,trace_key``) so that the trace files themselves keep the exact
headers the scenario readers require.

An availability entry (fedscale-behavior, flash) whose online windows would repeat more than
``MAX_REPETITIONS`` (100,000) times over ``--horizon`` (a period of a fraction of a second, or a period
crowded with windows) is left out with that reason, like an unusable entry: unrolling it would take
unbounded time and write millions of rows.  A file left with no usable entry is refused (exit 2).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from asyncfl.errors import ConfigError
from asyncfl.traces.fedscale import behavior_windows, capacity_profile
from asyncfl.traces.flash import flash_windows
from asyncfl.traces.unpickle import load_pickle
from asyncfl.traces.windows import unroll, unroll_problem

FORMATS = ("fedscale-capacity", "fedscale-behavior", "flash")
DEVICE_HEADER = ("client", "samples_per_s", "uplink_mbps", "downlink_mbps", "latency_s")
AVAILABILITY_HEADER = ("client", "start_s", "end_s")


@dataclass
class Converted:
    header: tuple[str, ...]
    rows: list[tuple]  # in client order
    mapping: list[tuple[int, str]]  # (client, trace key)
    skipped: dict[str, str] = field(default_factory=dict)  # trace key -> why it was left out
    entries: int = 0  # usable trace entries


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
        usable, skipped = _usable(data, lambda e: _bounded(behavior_windows(e), horizon_s))
        header = AVAILABILITY_HEADER
    elif fmt == "flash":
        data = load_json(path, "{guid: {'messages': 'time<TAB>state lines', ...}}")
        usable, skipped = _usable(data, lambda e: _bounded(flash_windows(e), horizon_s))
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
        else:
            windows, period = _windows_and_period(parsed)
            rows += [(client, s, e) for s, e in unroll(windows, period, horizon_s)]
    return Converted(header, rows, mapping, skipped, len(usable))


def _windows_and_period(parsed: tuple) -> tuple[list[tuple[float, float]], float]:
    """(online windows, period) of a parsed availability entry: FedScale's (windows, finish_time), or
    FLASH's (windows, trace_start, trace_end), whose period is a whole number of seconds as FLASH takes it."""
    if len(parsed) == 2:
        return parsed
    windows, start, end = parsed
    return windows, float(int(end - start))


def _bounded(parsed: Any, horizon_s: float) -> Any:
    """A parsed availability entry, or why it is left out: one whose windows would unroll into more copies
    than :data:`asyncfl.traces.windows.MAX_REPETITIONS` over the horizon (a tiny period: unbounded work)."""
    if isinstance(parsed, str):
        return parsed
    return unroll_problem(*_windows_and_period(parsed), horizon_s) or parsed


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
