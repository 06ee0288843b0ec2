"""The verdict-style report of a study: mean ± 95 % confidence interval over seeds, and differences
against a baseline variant paired by seed.

For every variant and measure (final accuracy, accuracy averaged over the last quarter of the run, best
accuracy, time and rounds to each target) the report gives the mean over seeds with a Student-t 95 %
interval (mean ± t_{0.975, n-1} · s / √n, s the sample standard deviation).  With a ``baseline:`` the
difference variant − baseline is formed seed by seed over the seeds both have, and its mean gets the same
t interval.  A time (or rounds) to a target a run never reached is restricted at its horizon
(:mod:`asyncfl.study.censoring`: in rounds, its last round or a diverged run's planned one), so the mean is
the restricted mean time (rounds) to target over every seed and the columns subtract to the difference, as in
the claims.  Pairing removes what the seeds share (data split, device profiles, availability draws), so a
paired interval is usually much narrower than the two unpaired ones.  "higher" / "lower" means the paired
interval excludes 0; "no difference" that it does not — which says the seeds cannot separate the two, not
that they are equal; "mixed" that the interval excludes 0 but a seed left out of it (one of the two never
reached the target) points the other way.  For a time (rounds) to target with no seed where both reached it,
the verdict says what happened instead: "only this variant reached it", "only the baseline reached it" or
"neither reached it"; "too few seeds" is left for fewer than two pairs otherwise (an interval needs two).  A
spread that cannot be computed (one seed) is printed ``n/a``.

Writes ``report.csv`` (numbers) and ``report.md`` (the table) into the sweep directory.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Collection, Mapping, Sequence

import pandas as pd
import yaml

from asyncfl.errors import ConfigError
from asyncfl.output.reading import read_summary
from asyncfl.output.run_directory import ENDED
from asyncfl.output.tables import markdown, write_csv, write_markdown
from asyncfl.output.writing import write_atomic
from asyncfl.study.censoring import restricted, run_horizons
from asyncfl.study.claim_tests import CLAIMS_INTRO, claim_markdown, claim_rows, seed_markdown, seed_rows
from asyncfl.study.claims import TUNED_ON, Claim
from asyncfl.study.completeness import Completeness, mark_partial_claims
from asyncfl.study.measures import column_of
from asyncfl.study.noise_report import floor_rows, kernel_spreads, noise_section
from asyncfl.study.seed_statistics import (
    CONFIDENCE,
    Interval,
    RunRecord,
    measures_by_run,
    paired_values,
    seed_keys,
    t_interval,
)
from asyncfl.study.tuned_sets import claims_on_tuned_sets
from asyncfl.study.tuning_results import tuning_section
from asyncfl.study.weight_shares import STARVED, study_weight_table


def paired_difference(
    values: Mapping[int, float], baseline: Mapping[int, float], confidence: float = CONFIDENCE
) -> Interval:
    """The t interval of ``values[s] - baseline[s]`` over the seeds s where both are finite."""
    return t_interval(paired_values(values, baseline), confidence)


def one_sided_misses(values: Mapping[int, float], baseline: Mapping[int, float]) -> tuple[int, int]:
    """Seeds where only one of the two has a value: (``values`` missing, ``baseline`` missing).  For a
    time to target that is a seed where one run never reached it, i.e. was the slower one there."""
    common = values.keys() & baseline.keys()
    return (
        sum(1 for s in common if not _finite(values[s]) and _finite(baseline[s])),
        sum(1 for s in common if _finite(values[s]) and not _finite(baseline[s])),
    )


# verdicts on a time to target that no seed has from both runs
ONLY_VARIANT, ONLY_BASELINE, NEITHER = (
    "only this variant reached it",
    "only the baseline reached it",
    "neither reached it",
)


def direction(diff: Interval, misses: tuple[int, int] = (0, 0)) -> str:
    """``higher`` / ``lower`` when the paired interval excludes 0, ``no difference`` otherwise.

    ``misses`` (:func:`one_sided_misses`, for times to target): the paired interval only sees seeds where
    both runs reached the target, so a variant that missed it on some seed the baseline reached was slower
    there, and calling it ``lower`` from the other seeds would drop the evidence against it (and the
    same for ``higher`` when the baseline missed).  Such a result is ``mixed``.  With no pair at all the
    misses alone decide when they all point one way: only one of the two ever reached the target."""
    if diff.n == 0 and misses[1] and not misses[0]:
        return ONLY_VARIANT
    if diff.n == 0 and misses[0] and not misses[1]:
        return ONLY_BASELINE
    if diff.n < 2 or math.isnan(diff.half_width):
        return "too few seeds"
    if diff.low > 0:
        return "mixed" if misses[1] else "higher"
    if diff.high < 0:
        return "mixed" if misses[0] else "lower"
    return "no difference"


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _is_target(measure: str) -> bool:
    """A time or rounds to a target (:func:`~asyncfl.study.seed_statistics.run_measures`): NaN there means
    "never reached", elsewhere "not measured"."""
    return measure.startswith(("time to ", "rounds to "))


def _censoring(
    measure: str, horizons: Mapping[str, Mapping[int, float]] | None, rounds: Mapping[str, Mapping[int, float]] | None
) -> Mapping[str, Mapping[int, float]] | None:
    """The horizons a miss of ``measure`` is restricted at: ``horizons`` (virtual s) for a time to a target,
    ``rounds`` for rounds to it, None for any other measure (or when not given)."""
    if measure.startswith("time to "):
        return horizons
    return rounds if measure.startswith("rounds to ") else None


def vs_baseline(measure: str, values: Mapping[int, float], baseline: Mapping[int, float], diff: Interval) -> str:
    """The verdict of ``values`` against ``baseline`` for one measure (see :func:`direction`)."""
    if not _is_target(measure):
        return direction(diff)
    if not any(_finite(v) for v in (*values.values(), *baseline.values())) and values.keys() & baseline.keys():
        return NEITHER
    return direction(diff, one_sided_misses(values, baseline))


def measure_table(
    records: Sequence[RunRecord], targets: Sequence[float], columns: Sequence[str] = ()
) -> dict[str, dict[str, dict[int, float]]]:
    """variant -> measure (:func:`~asyncfl.study.seed_statistics.run_measures`) -> seed -> value; a run without
    a seed is keyed by its position among the variant's runs."""
    table = {}
    for label, runs in measures_by_run(records, targets, columns).groupby("variant", sort=False):
        table[label] = {m: dict(zip(seed_keys(runs["seed"]), runs[m])) for m in runs.columns[2:]}
    return table


def run_ends(records: Sequence[RunRecord]) -> dict[str, dict[int, float]]:
    """variant -> seed -> the virtual time at which each ended run stopped (keyed as :func:`measure_table`);
    a time to a target the run never reached is censored at its horizon
    (:func:`asyncfl.study.censoring.run_horizons`), which for a run that diverged is later than its end."""
    out: dict[str, dict[int, float]] = {}
    for label in dict.fromkeys(r.label for r in records):
        for i, r in enumerate(r for r in records if r.label == label):
            summary = read_summary(r.path, required=False)
            if summary.get("status") in ENDED and isinstance(summary.get("virtual_time_s"), (int, float)):
                out.setdefault(label, {})[i if r.seed is None else int(r.seed)] = float(summary["virtual_time_s"])
    return out


def run_datasets(records: Sequence[RunRecord]) -> dict[str, str]:
    """variant -> the data.dataset its runs used (from a run's config.yaml; "unknown" when unreadable, and
    every name when its runs differ)."""
    found: dict[str, set[str]] = {}
    for r in records:
        try:
            data = (yaml.safe_load((r.path / "config.yaml").read_text(encoding="utf-8")) or {}).get("data") or {}
        except (OSError, yaml.YAMLError, AttributeError):
            data = {}
        found.setdefault(r.label, set()).add(str(data.get("dataset", "unknown")))
    return {label: "+".join(sorted(names)) for label, names in found.items()}


def restricted_times(
    table: Mapping[str, Mapping[str, Mapping[int, float]]],
    horizons: Mapping[str, Mapping[int, float]] | None,
    rounds: Mapping[str, Mapping[int, float]] | None = None,
) -> dict[str, dict[str, dict[int, float]]]:
    """``table`` with every time to a target a run never reached restricted at the run's horizon
    (:func:`asyncfl.study.censoring.run_horizons`), as the claims count it: each variant's mean is then its
    restricted mean time to target (RMST) and the paired difference the difference of the two RMSTs.  With
    ``rounds`` (each run's horizon in rounds) the rounds to a target alike."""
    out: dict[str, dict[str, dict[int, float]]] = {}
    for variant, measures in table.items():
        out[variant] = {}
        for m, by_seed in measures.items():
            ends = _censoring(m, horizons, rounds)
            if ends is None:
                out[variant][m] = dict(by_seed)
            else:
                out[variant][m] = {s: restricted(v, ends.get(variant, {}).get(s)) for s, v in by_seed.items()}
    return out


def report_rows(
    table: Mapping[str, Mapping[str, Mapping[int, float]]],
    baseline: str | None,
    confidence: float = CONFIDENCE,
    horizons: Mapping[str, Mapping[int, float]] | None = None,
    rounds: Mapping[str, Mapping[int, float]] | None = None,
) -> list[dict]:
    """report.csv: per variant and measure, the mean and CI over seeds and (with a baseline) the paired
    difference against the baseline with its CI.  With ``horizons`` (each run's, keyed as ``table``) a time to
    a target is restricted at the horizon where it was missed (:func:`restricted_times`) and ``reached``
    counts the seeds that got there; without, the times of the seeds that reached it.  ``rounds`` (each run's
    horizon in rounds) does the same for the rounds to a target."""
    if baseline is not None and baseline not in table:
        raise ConfigError(f"baseline: {baseline!r} is not a variant of this study ({', '.join(table)}).")
    kept = restricted_times(table, horizons, rounds)
    rows = []
    for variant, measures in table.items():
        for measure, observed in measures.items():
            by_seed = kept[variant][measure]
            own = t_interval(list(by_seed.values()), confidence)
            row = {
                "variant": variant, "measure": measure, "seeds": len(by_seed), "n": own.n,
                "mean": own.mean, "ci_half_width": own.half_width,
            }  # fmt: skip
            censored = _censoring(measure, horizons, rounds) is not None
            if censored:
                row["reached"] = sum(_finite(v) for v in observed.values())
            if baseline is not None:
                other = kept[baseline].get(measure, {})
                diff = paired_difference(by_seed, other, confidence)
                base = table[baseline].get(measure, {})  # the words of who reached it: from the unrestricted times
                said = vs_baseline(measure, observed, base, paired_difference(observed, base, confidence))
                if said not in (ONLY_VARIANT, ONLY_BASELINE, NEITHER) and censored:
                    said = direction(diff)  # the misses are inside the restricted times already
                verdict = "baseline" if variant == baseline else said
                row.update({
                    "baseline": baseline, "paired_seeds": diff.n, "diff_mean": diff.mean,
                    "diff_ci_half_width": diff.half_width, "vs_baseline": verdict,
                })  # fmt: skip
            rows.append(row)
    return rows


def format_interval(mean: float, half: float, scale: float = 1.0, digits: int = 1, signed: bool = False) -> str:
    """``mean ± half`` (scaled), ``mean ± n/a`` when the half-width is NaN (one value has no spread),
    ``—`` when the mean is NaN."""
    if not _finite(mean):
        return "—"
    sign = "+" if signed else ""
    text = f"{mean * scale:{sign},.{digits}f}"
    return f"{text} ± " + (f"{half * scale:,.{digits}f}" if _finite(half) else "n/a")


def _is_accuracy(measure: str) -> bool:
    return measure.endswith("accuracy") or measure.startswith("last-quarter accuracy")


def markdown_rows(rows: Sequence[Mapping], missing: Collection[str] = ()) -> list[dict[str, str]]:
    """One Markdown row per variant and measure; accuracies in percent (points), times in virtual s.
    A variant of ``missing`` (declared, no run a result) shows ``missing`` for its mean."""
    out = []
    for r in rows:
        scale, digits = (100.0, 1) if _is_accuracy(r["measure"]) else (1.0, 1)
        cells = {
            "variant": r["variant"],
            "measure": r["measure"] + (" (%)" if _is_accuracy(r["measure"]) else ""),
            "seeds": f"{r['n']}/{r['seeds']}" + (f", reached {r['reached']:.0f}" if _finite(r.get("reached")) else ""),
            "mean ± 95% CI": "missing" if r["variant"] in missing
            else format_interval(r["mean"], r["ci_half_width"], scale, digits),
        }  # fmt: skip
        if "baseline" in r:
            is_base = r["variant"] == r["baseline"]
            cells["paired difference vs " + r["baseline"]] = (
                "—" if is_base else format_interval(r["diff_mean"], r["diff_ci_half_width"], scale, digits, True)
            )
            cells["pairs"] = "" if is_base else str(r["paired_seeds"])
            cells["verdict"] = r["vs_baseline"]
        out.append(cells)
    return out


def write_report(
    out_dir: Path,
    records: Sequence[RunRecord],
    baseline: str | None,
    targets: Sequence[float] = (),
    claims: Sequence[Claim] = (),
    claims_note: str = "",
    completeness: Completeness | None = None,
) -> list[Path]:
    """report.csv and report.md for ``records`` (every run of a study) into ``out_dir``; with declared
    ``claims`` also claims.csv and claims.md (:mod:`asyncfl.study.claim_tests`) with the pairs behind them in
    claims_seeds.csv and claims_seeds.md; the claims table ends report.md and
    which opens with ``claims_note`` (e.g. that study.yaml's claims were edited after the sweep started).
    ``completeness``: the runs the study declares; when some are not results (:mod:`asyncfl.study.completeness`)
    report.md and claims.md open by saying so, every declared variant gets its rows (``missing`` where it
    has no result), seeds count against the declared ones, and each claim says what its variants lack."""
    completeness = completeness or Completeness((), ())
    declared, claims = claims, claims_on_tuned_sets(claims, out_dir)  # each on the runs tuned on its measure
    records = [r for r in records if not completeness.is_gap(r.label, r.seed)]  # failed, unfinished: no result
    columns = list(dict.fromkeys(c for c in (column_of(claim.measure) for claim in claims) if c))  # last_quarter:<c>
    table = declared_table(measure_table(records, targets, columns), completeness)
    horizons, rounds = run_horizons(records), run_horizons(records, "round")
    rows, missing = declared_rows(report_rows(table, baseline, horizons=horizons, rounds=rounds), completeness)
    written = [write_csv(out_dir / "report.csv", rows)]
    intro = completeness.heading() + report_intro(baseline, bool(claims), bool(targets))
    report_md = write_markdown(out_dir / "report.md", markdown_rows(rows, missing), intro)
    written.append(report_md)
    if claims:
        written += write_claims(out_dir, claims, claims_note, table, records, completeness)
        append_section(report_md, "## Declared claims\n\n" + (out_dir / "claims.md").read_text("utf-8"))
        spreads = kernel_spreads(out_dir, targets, columns)  # noise_floor: reruns under other CPU kernel sets
        append_section(report_md, noise_section(out_dir, floor_rows(claims, table, horizons, spreads)))
        written.append(out_dir / "noise_floor.csv")
    shares = study_weight_table(records)
    if len(shares):  # runs with algorithm.record_weights: does a weighting rule starve a group of clients?
        written.append(write_csv(out_dir / "weight_shares.csv", shares))
        append_section(report_md, weight_section(shares))
    append_section(report_md, tuning_section(out_dir, declared))  # tune: what was tuned, on which seeds, the choice
    return written


def report_intro(baseline: str | None, has_claims: bool, has_targets: bool = False) -> str:
    """What report.md says above its table."""
    intro = f"Mean ± {CONFIDENCE:.0%} confidence interval (Student t) over seeds (n/a: one seed); accuracies in %."
    if baseline:
        intro += (
            f" Differences against `{baseline}` are paired seed by seed; the verdict says whether the paired"
            " interval excludes 0, or which of the two reached a target when no seed has both."
        )
    else:
        intro += " No baseline, so no paired verdicts: name one with `baseline:` or `report --baseline VARIANT`."
    intro += (
        ""
        if not has_targets
        else (
            " A time to a target a run never reached counts as its horizon (its end; for a run that diverged, the"
            " horizon it was given), so its mean is the restricted mean time to target (RMST) over every seed, as in"
            " the claims, and 'reached' says on how many seeds it got there; rounds to a target alike, a miss"
            " counting as the run's last round (for a run that diverged, its stop.rounds or its peers' median)."
        )
    )
    if has_claims:  # the two can disagree near 0.05: a t-interval per measure against a Holm-corrected permutation test
        intro += (
            " This table describes (each row a two-sided t-interval, uncorrected); the declared claims below are"
            " the tested verdicts (sign-flip test, Holm-corrected), and where the two differ the claims hold."
        )
    return intro


def write_claims(
    out_dir: Path,
    claims: Sequence[Claim],
    claims_note: str,
    table: Mapping[str, Mapping[str, Mapping[int, float]]],
    records: Sequence[RunRecord],
    completeness: Completeness,
) -> list[Path]:
    """claims.csv / claims.md and claims_seeds.csv / claims_seeds.md (see :func:`write_report`)."""
    ends = run_horizons(records)  # a miss is censored at its run's horizon, a diverged run's included
    tested = mark_partial_claims(claim_rows(claims, table, ends, run_datasets(records)), completeness)
    intro = completeness.heading() + (f"**Note:** {claims_note}\n\n" if claims_note else "") + CLAIMS_INTRO
    if any(claim.measure.startswith("time_to:") for claim in claims):
        intro += TIME_RESOLUTION
    if any(TUNED_ON in claim.variant + claim.versus for claim in claims):
        intro += TUNED_SETS
    claims_md = write_markdown(out_dir / "claims.md", claim_markdown(tested), intro)
    pairs = seed_rows(claims, table, ends)
    seeds_md = write_markdown(out_dir / "claims_seeds.md", seed_markdown(pairs), SEEDS_INTRO)
    return [write_csv(out_dir / "claims.csv", tested), claims_md,
            write_csv(out_dir / "claims_seeds.csv", pairs, digits=None), seeds_md]  # fmt: skip


def declared_table(
    table: Mapping[str, Mapping[str, Mapping[int, float]]], completeness: Completeness
) -> dict[str, Mapping[str, Mapping[int, float]]]:
    """``table`` (:func:`measure_table`) with every declared variant, in the declared order: one without a
    result has every measure and no seed (a complete study's table as it is)."""
    if not completeness.partial:
        return dict(table)
    measures = next(iter(table.values()), {})
    out = {v: table.get(v, dict.fromkeys(measures, {})) for v in completeness.variants}
    return {**out, **{v: m for v, m in table.items() if v not in out}}


def declared_rows(rows: Sequence[Mapping], completeness: Completeness) -> tuple[list[dict], list[str]]:
    """report.csv's rows with seeds counted against the declared ones and ``missing`` as the verdict of a
    variant with no result; and those variants (a complete study's rows as they are)."""
    if not completeness.partial:
        return [dict(r) for r in rows], []
    missing = [v for v in completeness.variants if completeness.has_no_results(v)]
    out = []
    for row in rows:
        row = dict(row)
        if row["variant"] in completeness.variants:
            row["seeds"] = len(completeness.seeds)
        if row["variant"] in missing and "vs_baseline" in row:
            row["vs_baseline"] = "missing"
        out.append(row)
    return out, missing


# an FL-FDMS verdict once rested on 43 s steps: +30 s "contradicted", +1.6 s evaluated every round
TIME_RESOLUTION = (
    " A time to a target is that of the first evaluation at or above it, so it is known only to the evaluation"
    " interval (`eval.every_rounds`): a difference smaller than that interval cannot be resolved."
)


# a variant claimed on several measures is tuned on each (asyncfl.study.tuning)
TUNED_SETS = (
    f" A variant tuned on each measure its claims test has its own runs under its name, made with the point chosen"
    f" on its first measure, and where another measure chose another point, runs made with that one, named"
    f" `<variant>{TUNED_ON}<measure>` (':' as '_'): a claim reads, for both its variants, the runs tuned on its own"
    " measure (report.md's Tuning section lists each choice)."
)


SEEDS_INTRO = (
    "Every pair the claims in claims.md were tested on: one row per claim and seed, both variants' values (accuracy"
    " in points, times in virtual s) and their difference; 'censored' names a run that never reached the target,"
    " whose value is its horizon (its end; for a run that diverged, the horizon it was given). claims_seeds.csv"
    " holds the same numbers unrounded."
)


def weight_cells(shares: pd.DataFrame) -> list[dict[str, str]]:
    """The Markdown cells of weight_shares.csv's rows (:func:`~asyncfl.study.weight_shares.study_weight_table`),
    shares in percent."""
    return [{
        "grouping": r.grouping.replace("_", " "), "variant": r.variant, "group": r.group, "seeds": str(r.seeds),
        "updates (%)": f"{100 * r.update_share:.1f}", "weight (%)": f"{100 * r.weight_share:.1f}",
        "ratio": f"{r.ratio:.2f}", "starved": "yes" if r.starved else "",
    } for r in shares.itertuples()]  # fmt: skip


def weight_section(shares: pd.DataFrame) -> str:
    """The report's section on weight shares per client group (:mod:`asyncfl.study.weight_shares`)."""
    intro = (
        "## Aggregation weight per client group\n\nShare of the aggregation weight (weights.csv) against the share"
        " of the aggregated updates (updates.csv) per group of clients: per quartile of clients.csv's samples_per_s"
        " (speed quartile, Q1 the slowest) and, where the data isolate a class on a few clients (isolated_class),"
        f" those clients against the others; averaged over seeds; starved: a weight share below {STARVED} of the"
        " update share (a mechanism that discounts the group's updates to nothing). Numbers: `weight_shares.csv`."
    )
    return intro + "\n\n" + markdown(weight_cells(shares))


def append_section(path: Path, text: str) -> None:
    if text:
        write_atomic(path, path.read_text(encoding="utf-8") + "\n" + text)
