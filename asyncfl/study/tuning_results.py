"""What the tuning runs of a study (:mod:`asyncfl.study.tuning`) decided: each tuned variant's grid point
with the best score over the tuning seeds (ties: the first point), written to tuning.csv and tuned.yaml,
and the report's "Tuning" section.  Apart from the plan so that ``validate`` loads no pandas.

The score of a point is its criterion over the tuning seeds under a declared rule (:data:`RULES`):

mean            the mean (the default)
mean_minus_se   the mean moved one standard error (std ddof=1 / √n) towards worse: a point that is good
                on one seed and poor on another (a cliff) loses to a steadier one (the one-standard-error
                idea of Breiman et al. 1984, *Classification and Regression Trees*, §3.4.3)
worst           the worst seed (the lowest accuracy, the longest time)

The criterion may be any claim measure (:func:`measure_value`), so that a variant is tuned on what its
claims test (a per-class accuracy, a time to target); the report warns where it is not, where fewer than
:data:`ROBUST_SEEDS` tuning seeds were used, and where a chosen value sits at the edge of its grid; it lists
the choices that beat their runner-up by a near tie (:func:`near_ties`).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import yaml

from asyncfl.output.reading import read_summary
from asyncfl.output.run_directory import ENDED
from asyncfl.output.tables import write_csv
from asyncfl.output.writing import write_atomic
from asyncfl.study.censoring import planned_horizon
from asyncfl.study.claims import TIME_TO, Claim
from asyncfl.study.measures import ACCURACY_MEASURES, column_label, column_of
from asyncfl.study.seed_statistics import run_measures
from asyncfl.study.tuned_sets import evaluation_sets, split_choice
from asyncfl.study.tuning import DEFAULT_SEEDS, TUNED_FILE, TUNING_CSV, TUNING_DIR, TuningPlan

RULES = ("mean", "mean_minus_se", "worst")
# tune.criterion other than one measure, in the report's words (the measures follow)
PER_VARIANT = {"claimed": "the measure each variant's claims test", "per variant": "a measure per variant"}
ROBUST_SEEDS = DEFAULT_SEEDS  # fewer tuning seeds than this (set by hand): the report warns (two picked cliffs)


def criterion_value(plan: TuningPlan, run_dir: Path) -> float:
    """The criterion of one finished tuning run; a time to a target never reached is +inf."""
    if plan.spec.criterion == "time_to_target":
        time = run_measures(run_dir, [plan.target])[f"time to {plan.target:g} (virtual s)"]
        return math.inf if math.isnan(time) else time
    return run_measures(run_dir, [])[ACCURACY_MEASURES[plan.spec.criterion]]


def measure_value(measure: str, run_dir: Path, peers: Sequence[float] = ()) -> float:
    """A claim measure (``final_accuracy``, ``last_quarter_accuracy``, ``best_accuracy``,
    ``last_quarter:<column>``, ``time_to:<target>``) of one finished run.  A time to a target never
    reached is censored at the run's horizon, as in the claims (:mod:`asyncfl.study.censoring`): its end, or
    for a run that diverged the horizon it was given (its ``stop.virtual_time_s``, else the median end of
    ``peers``, the same point's runs that did not diverge), not the moment it diverged, so that a step size
    that diverges early does not look fast; NaN for a run that has not ended."""
    if measure.startswith(TIME_TO):
        target = float(measure[len(TIME_TO) :])
        time = run_measures(run_dir, [target])[f"time to {target:g} (virtual s)"]
        summary = read_summary(run_dir, required=False)
        if math.isnan(time) and summary.get("status") in ENDED:
            horizon = planned_horizon(run_dir, peers)
            return float(summary.get("virtual_time_s", math.nan) if horizon is None else horizon)
        return time
    column = column_of(measure)
    if column:
        return run_measures(run_dir, [], [column])[column_label(column)]
    return run_measures(run_dir, [])[ACCURACY_MEASURES[measure]]


def lower_is_better(measure: str) -> bool:
    return measure == "time_to_target" or measure.startswith(TIME_TO)


def score(values: Sequence[float], rule: str, lower: bool) -> float:
    """A grid point's score from its per-seed criterion values under ``rule`` (see the module docstring),
    in the criterion's unit; NaN when a value is."""
    if any(math.isnan(v) for v in values):
        return math.nan
    if rule == "mean":
        return sum(values) / len(values)
    if rule == "worst":
        return max(values) if lower else min(values)
    if rule == "mean_minus_se":
        mean = sum(values) / len(values)
        if math.isinf(mean) or len(values) < 2:  # one seed shows no spread: the mean alone
            return mean
        se = float(np.std(values, ddof=1)) / math.sqrt(len(values))
        return mean + se if lower else mean - se
    raise ValueError(f"rule: allowed: {', '.join(RULES)}; got {rule!r}.")


def choose(
    plan: TuningPlan, sweep_dir: Path, rule: str | None = None, measures: Mapping[str, str] | None = None
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The chosen point per variant (on its first measure) and the rows of tuning.csv, from the finished tuning
    runs; ``rule`` (default the plan's ``tune.rule``) and ``measures``: variant -> the claim measure to tune it on
    instead of the plan's criterion (default the plan's, from ``tune.criterion``)."""
    each, rows = choose_each(plan, sweep_dir, rule, measures)
    return split_choice(each)[0], rows


def choose_each(
    plan: TuningPlan, sweep_dir: Path, rule: str | None = None, measures: Mapping[str, str] | None = None
) -> tuple[dict[str, dict[str, dict[str, Any]]], list[dict[str, Any]]]:
    """variant -> each measure it is tuned on (its first, then :attr:`TuningPlan.also`) -> the chosen point, all
    from the same tuning runs; and the rows of tuning.csv, with a ``measure`` column where a variant is tuned on
    several (``rule``, ``measures``: as :func:`choose`)."""
    rule = plan.spec.rule if rule is None else rule
    measures = plan.measures if measures is None else measures
    each: dict[str, dict[str, dict[str, Any]]] = {}
    rows: list[dict[str, Any]] = []
    for name in plan.variants:
        each[name] = {}
        for measure in (measures.get(name), *plan.also.get(name, ())):
            point, own = _choose_on(plan, sweep_dir, name, measure, rule)
            each[name][measure or plan.spec.criterion] = point
            rows += [{"variant": name, "measure": measure or plan.spec.criterion, **r} if plan.also else
                     {"variant": name, **r} for r in own]  # fmt: skip
    return each, rows


def _choose_on(
    plan: TuningPlan, sweep_dir: Path, name: str, measure: str | None, rule: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``name``'s chosen point on ``measure`` (None: the plan's criterion) and its tuning.csv rows (no variant)."""
    widened = {(w.variant, w.point): w.round for w in plan.widened}
    margin = plan.spec.divergence_margin
    lower = lower_is_better(measure or plan.spec.criterion)
    points, ids = plan.points_of(name), plan.ids_of(name)
    dirs = [[sweep_dir / TUNING_DIR / name / pid / f"seed{s}" for s in plan.spec.seeds] for pid in ids]
    collapse = plan.spec.collapse_accuracy
    near = near_divergence(points, [any(failed(d, collapse) for d in ds) for ds in dirs], margin) if margin else []
    scores, rows = [], []
    for i, (point, pid) in enumerate(zip(points, ids)):
        peers = [float(e) for e in map(_undiverged_end, dirs[i]) if e is not None]  # horizons of a miss
        values = [measure_value(measure, d, peers) if measure else criterion_value(plan, d) for d in dirs[i]]
        mean, points_score = score(values, "mean", lower), score(values, rule, lower)
        scores.append(points_score)
        row = {"point": pid, **{k: point.get(k, "") for k in plan.spec.grid},
               **{f"seed{s}": v for s, v in zip(plan.spec.seeds, values)}}  # fmt: skip
        row = {**row, "mean": mean, **({"score": points_score} if rule != "mean" else {})}
        if plan.skipped:  # a grid key this variant's algorithm lacks (empty in its column)
            row["skipped"] = " ".join(plan.skipped.get(name, ()))
        if plan.widened:  # the widening round that added the point (0: the grid's own)
            row["widened"] = widened.get((name, pid), 0)
        if margin:
            row["near_divergence"] = near[i]
        rows.append(row)
    kept = [i for i in range(len(points)) if not (near and near[i])]
    best = best_point(scores, kept or range(len(points)), lower)  # every point near one: as without margin
    for row, pid in zip(rows, ids):
        row["chosen"] = pid == ids[best]
    return dict(points[best]), rows


def _undiverged_end(run_dir: Path) -> float | None:
    """The virtual end of a run that ended without diverging (None otherwise)."""
    summary = read_summary(run_dir, required=False)
    end = summary.get("virtual_time_s")
    ok = summary.get("status") in ENDED and summary.get("status") != "diverged" and isinstance(end, (int, float))
    return float(end) if ok else None


def best_point(scores: Sequence[float], among: Sequence[int], lower: bool) -> int:
    """The index in ``among`` with the best score (NaN never wins; ties keep the first; ``among[0]`` when all
    are NaN)."""
    best, best_score = among[0], math.nan
    for i in among:
        better = scores[i] < best_score if lower else scores[i] > best_score
        if not math.isnan(scores[i]) and (math.isnan(best_score) or better):  # strict: ties keep the first
            best, best_score = i, scores[i]
    return best


def near_divergence(points: Sequence[Mapping[str, Any]], diverged: Sequence[bool], margin: int) -> list[bool]:
    """Per point: whether a point where a tuning run diverged lies at most ``margin`` steps from it along one
    grid key, the other keys equal (steps over that key's distinct values, sorted; the point itself counts)."""
    keys = list(dict.fromkeys(k for p in points for k in p))
    rank = {k: {v: i for i, v in enumerate(sorted({p[k] for p in points if k in p}, key=_order))} for k in keys}

    def close(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
        differ = [k for k in keys if a.get(k) != b.get(k)]
        if len(differ) != 1:
            return not differ
        key = differ[0]
        return abs(rank[key][a[key]] - rank[key][b[key]]) <= margin

    bad = [p for p, d in zip(points, diverged) if d]
    return [any(close(p, q) for q in bad) for p in points]


def _order(value: Any) -> tuple:
    """Numbers by value, anything else after them by its text (a grid may mix them)."""
    return (0, value, "") if _number(value) else (1, 0, str(value))


def failed(run_dir: Path, collapse_accuracy: float | None = None) -> bool:
    """Whether a tuning run diverged (summary status), or ended at a final accuracy of at most
    ``collapse_accuracy`` (a model collapsed with finite parameters; None: not counted)."""
    summary = read_summary(run_dir, required=False)
    if summary.get("status") == "diverged":
        return True
    final = summary.get("final_accuracy")
    return collapse_accuracy is not None and isinstance(final, (int, float)) and final <= collapse_accuracy


def claimed_measure(variant: str, claims: Sequence[Claim]) -> str | None:
    """The one measure the claims about ``variant`` (as variant or versus) test, or None when they test
    none or several: the criterion a variant is best tuned on."""
    found = {c.measure for c in claims if variant in (c.variant, c.versus)}
    return found.pop() if len(found) == 1 else None


def write_choice(
    plan: TuningPlan,
    sweep_dir: Path,
    rule: str | None = None,
    measures: Mapping[str, str] | None = None,
    choice: tuple[dict[str, dict[str, Any]], list[dict[str, Any]]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Write tuning.csv and tuned.yaml; return the chosen values per variant, on its first measure (``rule``,
    ``measures``: as :func:`choose`; ``choice``: what :func:`choose_each` returned for these, so that the tuning
    runs are not read twice).  A variant tuned on several measures gets ``per_measure`` in tuned.yaml: measure ->
    its chosen point and the evaluation runs made with it (:func:`evaluation_sets`)."""
    rule = plan.spec.rule if rule is None else rule
    measures = plan.measures if measures is None else measures
    each, rows = choose_each(plan, sweep_dir, rule, measures) if choice is None else choice
    chosen, _ = split_choice(each)
    write_csv(sweep_dir / TUNING_CSV, rows, digits=None)
    criterion = plan.spec.criterion if isinstance(plan.spec.criterion, str) else "per variant"
    record = {
        "criterion": criterion, "target": plan.target, "seeds": list(plan.spec.seeds),
        "grid": dict(plan.spec.grid), "ties": "first grid point (last key varies fastest)", "chosen": chosen,
        "untuned": list(plan.untuned),
    }  # fmt: skip
    if rule != "mean" or measures:  # recorded where they differ from the defaults
        record.update({"rule": rule, "measures": dict(measures or {})})
    if plan.also:  # a variant tuned on each measure its claims test: the point per measure, the runs it made
        sets = evaluation_sets(each)
        record["per_measure"] = {
            name: {m: {"chosen": dict(p), "runs": sets[name, m]} for m, p in each[name].items()} for name in plan.also
        }  # fmt: skip  (copies: no YAML anchors in tuned.yaml)
    if plan.skipped:
        record["skipped"] = {name: list(keys) for name, keys in plan.skipped.items()}
    if plan.widened:
        record["widened"] = [{"variant": w.variant, "key": w.key, "edge": w.edge, "value": w.value, "round": w.round}
                             for w in plan.widened]  # fmt: skip
    if plan.spec.divergence_margin:
        near = {r["variant"] for r in rows if r["chosen"] and r["near_divergence"]}
        record["divergence_margin"] = plan.spec.divergence_margin
        if plan.spec.collapse_accuracy is not None:
            record["collapse_accuracy"] = plan.spec.collapse_accuracy
        record["near_divergence_everywhere"] = sorted(near)  # chosen without the margin: no point kept it
    write_atomic(sweep_dir / TUNED_FILE, yaml.safe_dump(record, sort_keys=False))
    return chosen


def tuning_warnings(record: Mapping[str, Any], claims: Sequence[Claim] = ()) -> list[str]:
    """What a reader should doubt about a tuning choice (tuned.yaml's ``record``): fewer than
    :data:`ROBUST_SEEDS` tuning seeds, a chosen numeric value at the edge of its grid (the best may lie
    beyond), and a variant tuned on another measure than its claims test."""
    out = []
    seeds = record.get("seeds") or []
    if len(seeds) < ROBUST_SEEDS:
        out.append(
            f"tuned on {len(seeds)} seed(s), fewer than {ROBUST_SEEDS}: one seed's cliff can decide the choice; "
            "use more tuning seeds, or the rule mean_minus_se or worst."
        )
    for who, variant, point in _choices(record):
        for key, value in point.items():
            beyond = [w["value"] for w in record.get("widened") or [] if (w["variant"], w["key"]) == (variant, key)]
            grid = [v for v in [*record["grid"].get(key, []), *beyond] if _number(v)]
            if len(grid) >= 2 and _number(value) and value in (min(grid), max(grid)):
                side = "largest" if value == max(grid) else "smallest"
                out.append(f"{who}: {key} = {value} is the {side} value of its grid; the best may lie beyond it.")
    criterion = record.get("criterion")
    if criterion == "time_to_target" and record.get("target") is not None:
        criterion = f"{TIME_TO}{record['target']:g}"
    tuned_on = record.get("measures") or {}
    per = record.get("per_measure") or {}
    for variant in record.get("chosen") or {}:
        on = tuned_on.get(variant, criterion)
        claimed = sorted({c.measure for c in claims if variant in (c.variant, c.versus)} - {on, *per.get(variant, ())},
                         key=str)  # fmt: skip
        if claimed and not _same_time(on, claimed):
            out.append(f"{variant}: tuned on {on} but claimed on {', '.join(claimed)}.")
    return out


def _choices(record: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(who, variant, point) for each choice of tuned.yaml's ``record`` that made evaluation runs: a variant's on
    its first measure, then ``<variant> on <measure>`` for another measure it was tuned on (``per_measure``) that
    chose another point."""
    per = record.get("per_measure") or {}
    out = []
    for variant, point in (record.get("chosen") or {}).items():
        others = [(m, e["chosen"]) for m, e in list((per.get(variant) or {}).items())[1:] if e["chosen"] != point]
        out += [(variant, variant, point)] + [(f"{variant} on {m}", variant, other) for m, other in others]
    return out


@dataclass(frozen=True)
class NearTie:
    """A choice that beats its runner-up by at most one standard error (:func:`near_ties`)."""

    variant: str
    chosen: dict[str, str]  # grid key -> value, as tuning.csv writes it
    runner_up: dict[str, str]
    advantage: float  # mean over the tuning seeds of (chosen − runner-up), in the criterion's better direction
    se: float  # its standard error
    measure: str

    def line(self) -> str:
        def point(values: Mapping[str, str]) -> str:
            return ", ".join(f"{k} = {v}" for k, v in values.items())

        return (
            f"{self.variant}: {point(self.chosen)} over {point(self.runner_up)}, "
            f"{self.advantage:+.3g} ± {self.se:.3g} on {self.measure}"
        )


def near_ties(record: Mapping[str, Any], rows: Sequence[Mapping[str, str]]) -> list[NearTie]:
    """Each tuned variant whose choice is a near tie.  The runner-up is the other point with the best
    score among the points the choice was made from (not those ``divergence_margin`` kept out); the choice
    is a near tie when its paired advantage over the runner-up, the mean over the tuning seeds of
    (chosen − runner-up) in the criterion's better direction, is at most one standard error of those
    per-seed differences (std ddof=1 / √n).  Other tuning seeds may then choose the runner-up: a verdict
    about the variant may turn on the tuning seeds (FedHist at N/K = 100 chose lr 0.01 over 0.03 with an
    advantage of −0.003 ± 0.018, and three verdicts moved with that choice).  A flat optimum gives near
    ties too, where the choice matters little; the line says which, not how much it matters.
    ``rows``: tuning.csv's rows as read (text); a variant with fewer than two tuning seeds, or with a value
    that is not finite (a target never reached), is left out."""
    seeds = [f"seed{s}" for s in record.get("seeds") or []]
    criterion = record.get("criterion")
    criterion = f"{TIME_TO}{record['target']:g}" if criterion == "time_to_target" else criterion
    tuned_on = record.get("measures") or {}
    per = record.get("per_measure") or {}
    out = []
    for variant, on in ((v, m) for v in record.get("chosen") or {} for m in per.get(v) or [tuned_on.get(v, criterion)]):
        own = [r for r in rows if r.get("variant") == variant and r.get("measure", on) == on]
        chosen = [r for r in own if r.get("chosen") == "True"]
        if len(seeds) < 2 or len(chosen) != 1:
            continue
        pool = [r for r in own if r is not chosen[0] and r.get("near_divergence") == chosen[0].get("near_divergence")]
        lower = lower_is_better(on)
        ranked = sorted((r for r in pool if math.isfinite(_value(r, "score"))), key=lambda r: _value(r, "score"),
                        reverse=not lower)  # fmt: skip
        if not ranked:
            continue
        a = np.array([_value(chosen[0], s) for s in seeds])
        b = np.array([_value(ranked[0], s) for s in seeds])
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            continue
        advantage = b - a if lower else a - b
        se = float(np.std(advantage, ddof=1)) / math.sqrt(len(seeds))
        if advantage.mean() <= se:
            grid = list(record.get("grid") or {})
            points = _point(grid, chosen[0]), _point(grid, ranked[0])
            out.append(NearTie(variant, *points, float(advantage.mean()), se, on))
    return out


def tuning_rows(folder: Path) -> list[dict[str, str]]:
    """The rows of ``folder``/tuning.csv as text, as :func:`near_ties` reads them ([] where there is none)."""
    path = folder / TUNING_CSV
    if not path.is_file():
        return []
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _value(row: Mapping[str, str], column: str) -> float:
    """A number of a tuning.csv row as read; NaN where empty (``score`` falls back to ``mean``)."""
    text = row.get(column) or (row.get("mean") if column == "score" else "")
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def _point(keys: Sequence[str], row: Mapping[str, str]) -> dict[str, str]:
    """A tuning.csv row's grid values (a key the variant's algorithm lacks is empty there: left out)."""
    return {k: row[k] for k in keys if row.get(k) not in (None, "")}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same_time(on: str, claimed: Sequence[str]) -> bool:
    """time_to:0.8 and time_to:0.80 name one measure."""
    if not on.startswith(TIME_TO) or len(claimed) != 1 or not claimed[0].startswith(TIME_TO):
        return False
    return float(on[len(TIME_TO) :]) == float(claimed[0][len(TIME_TO) :])


def tuning_section(sweep_dir: Path, claims: Sequence[Claim] = (), points: str = f"Every point: `{TUNING_CSV}`") -> str:
    """The report's "Tuning" section from tuned.yaml ('' when the study tuned nothing), with
    :func:`tuning_warnings` against the study's ``claims``; ``points``: the sentence that says where every
    tuning point is (a page that publishes tuning.csv elsewhere names that copy)."""
    path = sweep_dir / TUNED_FILE
    if not path.is_file():
        return ""
    record = yaml.safe_load(path.read_text(encoding="utf-8"))
    crit = record["criterion"] + (f" (target {record['target']:g})" if record["criterion"] == "time_to_target" else "")
    crit = PER_VARIANT.get(crit, crit)
    grid = "; ".join(f"`{k}` in {v}" for k, v in record["grid"].items())
    rule = record.get("rule", "mean")
    how = f"best mean {crit}" if rule == "mean" else f"best {crit} by the rule {rule}"
    measures, per = record.get("measures") or {}, record.get("per_measure") or {}
    how += "".join(f"; {v} on {' and '.join(per[v]) if v in per else m}" for v, m in measures.items())
    lines = [
        "## Tuning",
        "",
        f"Tuned per variant on seeds {record['seeds']} (disjoint from the evaluation seeds): {grid}. Criterion: "
        f"{how} over the tuning seeds; ties go to the first grid point. {points}.",
        "",
    ]
    lines += _chosen_table(record, record["criterion"])
    skipped = record.get("skipped") or {}
    lines += [
        f"| {v} | "
        + ("| " if per else "")
        + "not tuned (its own values"
        + (f"; its algorithm has no {', '.join(skipped[v])}" if skipped.get(v) else "")
        + ") |"
        + (f" {v} |" if per else "")
        for v in record.get("untuned", [])
    ]
    skipped_tuned = [(v, keys) for v, keys in skipped.items() if v in record["chosen"]]
    if skipped_tuned:
        lines += [""] + [f"Not tuned for {v} (its algorithm has no such setting, or its set fixes it): "
                         f"{', '.join(keys)}." for v, keys
                         in skipped_tuned]  # fmt: skip
    if record.get("divergence_margin"):
        m = record["divergence_margin"]
        a = record.get("collapse_accuracy")
        how = "diverged" + (f" or ended at most {a:g} accurate (`collapse_accuracy: {a:g}`)" if a is not None else "")
        lines += ["", f"Never chosen: a point at most {m} grid step(s) along one key from a point where a tuning run "
                      f"{how} (`divergence_margin: {m}`; `near_divergence` in `{TUNING_CSV}`)."]  # fmt: skip
        lines += [f"{v}: every point was that close; chosen as without the margin."
                  for v in record.get("near_divergence_everywhere") or []]  # fmt: skip
    if record.get("widened"):
        lines += ["", "Widened beyond the grid's edge (`widen: true`), the choice made again each time:", ""]
        lines += [f"- {w['variant']}: {w['key']} = {w['edge']} at the edge, {w['value']} added (round {w['round']})"
                  for w in record["widened"]]  # fmt: skip
    ties = near_ties(record, tuning_rows(sweep_dir))
    if ties:
        lines += ["", "Near ties: the chosen point beats the runner-up by at most one standard error of their "
                      "paired difference over the tuning seeds (mean ± standard error, in the criterion's unit). "
                      "Other tuning seeds may choose the runner-up, so a verdict about these variants may turn "
                      "on the tuning seeds (where the optimum is flat, it matters little):", ""]  # fmt: skip
        lines += [f"- {t.line()}" for t in ties]
    warnings = tuning_warnings(record, claims)
    if warnings:
        lines += ["", "Warnings:", ""] + [f"- {w}" for w in warnings]
    return "\n".join(lines) + "\n"


def _chosen_table(record: Mapping[str, Any], criterion: str) -> list[str]:
    """The Tuning section's table of choices: variant | chosen, or where a variant was tuned on several measures
    (``per_measure``) variant | tuned on | chosen | runs (the evaluation runs made with the point)."""

    def values(point: Mapping[str, Any]) -> str:
        return ", ".join(f"{k} = {x}" for k, x in point.items())

    per = record.get("per_measure")
    if not per:
        return ["| variant | chosen |", "|---|---|"] + [f"| {v} | {values(c)} |" for v, c in record["chosen"].items()]
    lines = ["| variant | tuned on | chosen | runs |", "|---|---|---|---|"]
    for v, c in record["chosen"].items():
        entries = per.get(v) or {(record.get("measures") or {}).get(v, criterion): {"chosen": c, "runs": v}}
        lines += [f"| {v} | {m} | {values(e['chosen'])} | {e['runs']} |" for m, e in entries.items()]
    return lines
