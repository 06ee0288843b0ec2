"""What the tuning runs of a study (:mod:`asyncfl.study.tuning`) decided: each tuned variant's grid point
with the best mean criterion over the tuning seeds (ties: the first point), written to tuning.csv and
tuned.yaml, and the report's "Tuning" section.  Apart from the plan so that ``validate`` loads no pandas.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from asyncfl.output.tables import write_csv
from asyncfl.output.writing import write_atomic
from asyncfl.study.measures import ACCURACY_MEASURES
from asyncfl.study.seed_statistics import run_measures
from asyncfl.study.tuning import TUNED_FILE, TUNING_CSV, TUNING_DIR, TuningPlan


def criterion_value(plan: TuningPlan, run_dir: Path) -> float:
    """The criterion of one finished tuning run; a time to a target never reached is +inf."""
    if plan.spec.criterion == "time_to_target":
        time = run_measures(run_dir, [plan.target])[f"time to {plan.target:g} (virtual s)"]
        return math.inf if math.isnan(time) else time
    return run_measures(run_dir, [])[ACCURACY_MEASURES[plan.spec.criterion]]


def choose(plan: TuningPlan, sweep_dir: Path) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The chosen point per variant and the rows of tuning.csv, from the finished tuning runs."""
    lower = plan.spec.criterion == "time_to_target"
    chosen, rows = {}, []
    for name in plan.variants:
        best, best_mean = 0, math.nan
        means = []
        for i, (point, pid) in enumerate(zip(plan.points, plan.ids)):
            values = [criterion_value(plan, sweep_dir / TUNING_DIR / name / pid / f"seed{s}") for s in plan.spec.seeds]
            mean = math.nan if any(math.isnan(v) for v in values) else sum(values) / len(values)
            means.append(mean)
            better = mean < best_mean if lower else mean > best_mean
            if not math.isnan(mean) and (math.isnan(best_mean) or better):  # strict: ties keep the first point
                best, best_mean = i, mean
            rows.append({"variant": name, "point": pid, **point,
                         **{f"seed{s}": v for s, v in zip(plan.spec.seeds, values)}, "mean": mean})  # fmt: skip
        chosen[name] = dict(plan.points[best])
        for row, pid in zip(rows[-len(plan.points) :], plan.ids):
            row["chosen"] = pid == plan.ids[best]
    return chosen, rows


def write_choice(plan: TuningPlan, sweep_dir: Path) -> dict[str, dict[str, Any]]:
    """Write tuning.csv and tuned.yaml; return the chosen values per variant."""
    chosen, rows = choose(plan, sweep_dir)
    write_csv(sweep_dir / TUNING_CSV, rows, digits=None)
    record = {
        "criterion": plan.spec.criterion, "target": plan.target, "seeds": list(plan.spec.seeds),
        "grid": dict(plan.spec.grid), "ties": "first grid point (last key varies fastest)", "chosen": chosen,
        "untuned": list(plan.untuned),
    }  # fmt: skip
    write_atomic(sweep_dir / TUNED_FILE, yaml.safe_dump(record, sort_keys=False))
    return chosen


def tuning_section(sweep_dir: Path) -> str:
    """The report's "Tuning" section from tuned.yaml ('' when the study tuned nothing)."""
    path = sweep_dir / TUNED_FILE
    if not path.is_file():
        return ""
    record = yaml.safe_load(path.read_text(encoding="utf-8"))
    crit = record["criterion"] + (f" (target {record['target']:g})" if record["criterion"] == "time_to_target" else "")
    grid = "; ".join(f"`{k}` in {v}" for k, v in record["grid"].items())
    lines = [
        "## Tuning",
        "",
        f"Tuned per variant on seeds {record['seeds']} (disjoint from the evaluation seeds): {grid}. Criterion: "
        f"best mean {crit} over the tuning seeds; ties go to the first grid point. Every point: `{TUNING_CSV}`.",
        "",
        "| variant | chosen |",
        "|---|---|",
    ]
    lines += [f"| {v} | " + ", ".join(f"{k} = {x}" for k, x in c.items()) + " |" for v, c in record["chosen"].items()]
    lines += [f"| {v} | not tuned (its own values) |" for v in record.get("untuned", [])]
    return "\n".join(lines) + "\n"
