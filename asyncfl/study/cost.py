"""The cost side of a study, read from the timing world's files of every run: how much the server heard,
how much computing was thrown away, and how many clients it never heard from.

Per run (the same definitions as ``advise``'s, :mod:`asyncfl.sweep.advise`):

``updates per virtual hour``  aggregated updates (rows of updates.csv) / (summary.json ``virtual_time_s`` / 3600)
``lost compute (virtual s)``  Σ clients.csv ``lost_compute_s``: seconds of computing spent on tasks that then
                              failed (offline, empty battery, cut by a deadline), summed over clients
``lost compute share``        that sum / Σ clients.csv ``compute_s`` (all computing, kept or thrown away)
``never heard share``         share of clients with ``participations`` = 0 (never delivered an update)

Updates that were delivered but then not aggregated (K-async ``dropped_stale``, a sync ``late`` update
dropped) are not failed tasks, so their computing is not in ``lost_compute_s``.

Over seeds each measure gets the report's mean ± 95 % t interval and, with a baseline, the interval of
the difference paired by seed (:func:`asyncfl.study.report.report_rows`).  Writes ``cost.csv`` (long
form, like report.csv) and ``cost.md`` (one row per variant).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from asyncfl.output.reading import has_table, load_table, read_summary
from asyncfl.output.tables import write_csv, write_markdown
from asyncfl.study.report import CONFIDENCE, format_interval, report_rows
from asyncfl.study.seed_statistics import RunRecord

UPDATES_PER_HOUR = "updates per virtual hour"
LOST_COMPUTE = "lost compute (virtual s)"
LOST_SHARE = "lost compute share"
NEVER_HEARD = "never heard share"
COST_MEASURES = (UPDATES_PER_HOUR, LOST_COMPUTE, LOST_SHARE, NEVER_HEARD)
SHARES = (LOST_SHARE, NEVER_HEARD)  # printed in percent


def run_costs(run_dir: Path) -> dict[str, float]:
    """The four cost measures of one run directory (NaN where a file or column is missing)."""
    hours = float(read_summary(run_dir, required=False).get("virtual_time_s") or math.nan) / 3600.0
    updates_file, clients_file = run_dir / "updates.csv", run_dir / "clients.csv"
    updates = len(load_table(updates_file)) if has_table(updates_file) else math.nan
    clients = load_table(clients_file) if has_table(clients_file) else pd.DataFrame()
    lost = float(clients["lost_compute_s"].sum()) if "lost_compute_s" in clients else math.nan
    computed = float(clients["compute_s"].sum()) if "compute_s" in clients else math.nan
    return {
        UPDATES_PER_HOUR: updates / hours if hours > 0 else math.nan,
        LOST_COMPUTE: lost,
        LOST_SHARE: lost / computed if computed > 0 else math.nan,
        NEVER_HEARD: float((clients["participations"] == 0).mean()) if len(clients) else math.nan,
    }


def cost_table(records: Sequence[RunRecord]) -> dict[str, dict[str, dict[int, float]]]:
    """variant -> measure -> seed -> value (the shape of :func:`asyncfl.study.report.measure_table`); a run
    without a seed is keyed by its position among the variant's runs."""
    table: dict[str, dict[str, dict[int, float]]] = {}
    for record in records:
        measures = table.setdefault(record.label, {m: {} for m in COST_MEASURES})
        seed = record.seed if record.seed is not None else len(measures[UPDATES_PER_HOUR])
        for measure, value in run_costs(record.path).items():
            measures[measure][seed] = value
    return table


def cost_markdown(rows: Sequence[Mapping]) -> list[dict[str, str]]:
    """One row per variant, one column per measure: mean ± 95 % CI (shares in percent)."""
    out: dict[str, dict[str, str]] = {}
    for r in rows:
        cells = out.setdefault(r["variant"], {"variant": r["variant"], "seeds": f"{r['seeds']}"})
        share = r["measure"] in SHARES
        name = r["measure"].replace("share", "(%)") if share else r["measure"]
        digits = 1 if share else 0
        cells[name] = format_interval(r["mean"], r["ci_half_width"], 100.0 if share else 1.0, digits)
    return list(out.values())


def write_costs(out_dir: Path, records: Sequence[RunRecord], baseline: str | None = None) -> list[Path]:
    """cost.csv (per variant and measure: mean, CI and, with ``baseline``, the paired difference and its
    verdict) and cost.md (the means with their CIs, one row per variant) into ``out_dir``."""
    rows = report_rows(cost_table(records), baseline)
    intro = (
        f"Cost from the timing world: mean ± {CONFIDENCE:.0%} confidence interval (Student t) over seeds. "
        "Updates per virtual hour = aggregated updates; lost compute = seconds of computing on tasks that "
        "then failed (offline, battery, deadline), summed over clients, and its share of all computing; "
        "never heard = clients that never delivered an update."
    )
    return [write_csv(out_dir / "cost.csv", rows), write_markdown(out_dir / "cost.md", cost_markdown(rows), intro)]
