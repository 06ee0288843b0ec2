"""Covers: every paper reproduction of docs/findings/papers.md, with one command.

Each study of ``STUDIES`` is a study file in scenarios/papers/ that declares its claims (``claims:``, from the
paper's tables, fixed before any evaluation run) and tunes every variant the same way (``tune:``, on tuning
seeds disjoint from the evaluation seeds).  This script runs each study exactly as
``python -m asyncfl scenarios/papers/<study>.yaml`` does (tuning runs, then the evaluation runs with the chosen
values, then report.md and claims.md) into runs/papers/<study>/ (a finished sweep is reused, an unfinished one
resumed), then writes

  docs/results/papers/<study>/report.md, report.csv, claims.csv, tuning.csv, tuned.yaml   copies of the sweep's
  docs/results/papers/<study>/runs.tar.xz  what these tables read of the study's runs (ARCHIVED_*), so that
                                           --tables-only rebuilds them where runs/papers/<study> is gone
  docs/results/papers/claims.csv           every claim of every study, full horizon and half horizon
  docs/results/papers/fedar_exclusions.csv FedAR's cutoff and its step scale per run
  docs/results/papers/fedhist_diagnostics.csv  FedHist's utility evaluations per run (when the runs record them)
  docs/results/papers/compute.csv          per study: runs (tuning + evaluation), summed run seconds, wall time,
                                           load at its start, the CPUs its runs name
  docs/results/papers/central_baselines.csv  MNIST-1D central baselines (--central)
  docs/figures/papers_<section>.md         the claim table of each paper (FedHist's fairness experiment on its own:
                                           papers_fedhist_fairness.md), included by docs/findings/papers.md
  docs/figures/papers_<section>_weights.md the aggregation weight per client group, where its runs record weights
  docs/figures/papers_tuning.md            what was tuned, on which seeds, and the chosen values
  docs/figures/papers_compute.md, papers_central.md, papers_fedar_exclusions.md, papers_fedhist_diagnostics.md
  docs/figures/papers_followup_<name>.md   a follow-up's claims table (FOLLOWUPS: ours, a study rerun with
                                           overrides on new seeds), its files and runs.tar.xz in
                                           docs/results/papers/followups/<name>/

Verdicts are those of ``claims:`` (asyncfl.study.claim_tests): paired sign-flip p, Holm-adjusted within each
study's families in both directions, "supported" / "contradicted" / "inconclusive" at 0.05, and whether the
paper's effect size lies inside our 90 % sign-flip interval (tested only on the paper's data set, paper_data:).
Every claim is also tested on the same runs cut at HALF their horizon (virtual time; a target not reached by
then is censored at the cut, as a full run's miss at its end; a run that diverged is cut at half the horizon
it was given, and counts as broken there if it had broken by then): a verdict that differs there is marked,
since it depends on where the run stops.  Only complete studies (every planned run ended, nobody writing the sweep) are
tabled, each sweep's report rewritten first with this code; a section waits for all of its studies, the tables
over every study for all of them.  A study whose sweep is not in runs/papers is read from its published
runs.tar.xz (when the study file is unchanged since): its tables are recomputed, its report is kept as published.

    python benchmarks/experiments/reproduce_papers.py                 # every study, then the tables
    python benchmarks/experiments/reproduce_papers.py --tables-only   # tables from the finished sweeps in runs/papers
    python benchmarks/experiments/reproduce_papers.py --central       # also the 1-client central baselines
    python benchmarks/experiments/reproduce_papers.py --only fedhist_fairness_study --executor ray --force
                                       # one study, its runs on every core; run it again to resume it
    python benchmarks/tools/docs_sync.py                              # copy the tables into the docs pages
"""

from __future__ import annotations

import argparse
import atexit
import csv
import io
import math
import multiprocessing
import os
import shlex
import shutil
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: one thread avoids oversubscription

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

from asyncfl.cli.study import sweep_claims  # noqa: E402
from asyncfl.config import apply_override, read_yaml  # noqa: E402
from asyncfl.output.lock import holder, writing  # noqa: E402
from asyncfl.output.tables import markdown, write_csv  # noqa: E402
from asyncfl.output.writing import write_atomic  # noqa: E402
from asyncfl.study.censoring import planned_horizon, run_horizons  # noqa: E402
from asyncfl.study.claim_tests import claim_markdown, claim_rows, holm  # noqa: E402
from asyncfl.study.claims import ALPHA, DECLARED_FILE, Claim  # noqa: E402
from asyncfl.study.compare import STUDY_FILE, is_finished, sweep_records  # noqa: E402
from asyncfl.study.completeness import Completeness  # noqa: E402
from asyncfl.study.measures import column_label, column_of  # noqa: E402
from asyncfl.study.report import (  # noqa: E402
    format_interval,
    measure_table,
    run_datasets,
    run_ends,
    weight_cells,
    write_claims,
    write_report,
)
from asyncfl.study.seed_statistics import TAIL_SHARE, RunRecord, evaluations, t_interval  # noqa: E402
from asyncfl.study.spec import load_study  # noqa: E402
from asyncfl.study.tuning import TUNED_FILE, TUNING_CSV, TUNING_DIR  # noqa: E402
from asyncfl.study.tuning_results import near_ties, tuning_rows  # noqa: E402
from asyncfl.study.weight_shares import ISOLATED_CLASS  # noqa: E402
from asyncfl.sweep.study_sweep import run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402
from benchmarks.tools.study_wall_clock import WALL_FILE, StudyWallClock, read_record  # noqa: E402

RUNS = ROOT / "runs" / "papers"
RESULTS = ROOT / "docs" / "results" / "papers"
PLOTS = ROOT / "docs" / "figures"
STUDIES = (  # in the order they are run: the headline comparisons first
    "fedar_mnist1d",
    "fedar_mnist1d_markov",
    "fedau_mnist1d_bernoulli",
    "fedau_mnist1d_markov",
    "fedau_mnist1d_cyclic",
    "fl_fdms_mnist1d_a03",
    "fl_fdms_mnist1d_a05",
    "fl_fdms_mnist1d_a07",
    "fl_fdms_mnist1d_dirichlet",
    "fedhist_nk10_mnist1d",
    "fedhist_nk100_mnist1d",
    "fedhist_fairness_study",
    "fedhist_fairness_nk25_study",
)
PAPERS = {"fedar": "FedAR", "fedau": "FedAU", "fl_fdms": "FL-FDMS", "fedhist": "FedHist"}
# Follow-ups (ours): a study of STUDIES run again with --set overrides on evaluation seeds never run before, its
# claims unchanged and the command declared in a commit before its runs.  Each runs as
#   python -m asyncfl scenarios/papers/<study>.yaml --executor ray --set ... --out runs/papers_followups/<name>
# and, once complete, is tabled on its own (docs/figures/papers_followup_<name>.md), never in claims.csv.
FOLLOWUPS: dict[str, tuple[str, tuple[str, ...]]] = {}
# Retired: fedhist_nk10_margin (fedhist_nk10_mnist1d with tune.divergence_margin=1, tune.collapse_accuracy=0.15 on
# seeds 30-44): issue 47 made its rule every study's own, so the reruns' main tables say it; its published table
# (docs/figures/papers_followup_fedhist_nk10_margin.md) stays in the history once papers.md is regenerated.
FOLLOWUP_RESULTS = "followups"  # docs/results/papers/followups/<name>/
HALF = 0.5
COPIED = (
    "report.md",
    "report.csv",
    "claims.md",
    "claims.csv",
    "claims_seeds.md",
    "claims_seeds.csv",
    "weight_shares.csv",
    TUNING_CSV,
    TUNED_FILE,
)
ARCHIVE = "runs.tar.xz"
# What the tables read (study_claim_rows, run_seconds, fedar_rows, the diagnostics, the weight tables; tuned.yaml
# and tuning.csv beside them), not the event logs (timeline_tasks.csv, offline_periods.csv, updates.csv: ~4 MB per run).
ARCHIVED_SWEEP_FILES = (STUDY_FILE, DECLARED_FILE, TUNED_FILE, TUNING_CSV, "weight_shares.csv", WALL_FILE)
ARCHIVED_RUN_FILES = (
    "summary.json",
    "config.yaml",
    "metrics.csv",
    "metrics.parquet",
    "fedar_exclusions.csv",
    "fedhist_diagnostics.csv",
)
ARCHIVED_TUNING_FILES = ("summary.json",)  # their real seconds (compute table); tuning.csv holds their scores
_restored: dict[str, Path] = {}  # study -> where its archive was unpacked for this process


def paper_of(study: str) -> str:
    return next(p for p in sorted(PAPERS, key=len, reverse=True) if study.startswith(p + "_"))


def study_file(name: str) -> Path:
    return ROOT / "scenarios" / "papers" / f"{name}.yaml"


def sweep_dir_of(name: str) -> Path:
    """runs/papers/<name>, or, where that holds no sweep, the study's published runs.tar.xz unpacked into a
    temporary folder (once per process) when the study file is unchanged since those runs; else the former."""
    own = RUNS / name
    archive = RESULTS / name / ARCHIVE
    if name in _restored or (own / STUDY_FILE).is_file() or not archive.is_file():
        return _restored.get(name, own)
    into = unpacked(archive, read_yaml(study_file(name)), study_file(name).parent, name)
    if into is None:
        print(f"{name}: its published {ARCHIVE} holds runs of an older {study_file(name).name}; not used")
        return own
    _restored[name] = into
    return into


def unpacked(archive: Path, current: dict, folder: Path, name: str) -> Path | None:
    """``archive`` unpacked into a temporary folder (removed when the process ends) when its study.yaml holds
    ``current`` (the study file's content, in ``folder``: :func:`same_study`), else None."""
    into = Path(tempfile.mkdtemp(prefix=f"asyncfl-{name}-"))
    atexit.register(shutil.rmtree, into, True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archived = read_yaml(into / STUDY_FILE)
    if "families" in current and "families" not in archived:  # declared after the runs: like `run --resume`,
        archived["families"] = current["families"]  # study.yaml gains them, declared_claims.yaml does not (the
        write_atomic(into / STUDY_FILE, yaml.safe_dump(archived, sort_keys=False))  # report says so)
    if same_study(archived, current, folder):
        return into
    shutil.rmtree(into)
    return None


def same_study(archived: object, current: object, folder: Path) -> bool:
    """Whether a sweep's study.yaml (``archived``) holds the study file's content (``current``, in ``folder``).
    A sweep writes a file the study names relative to its folder (a device trace) as the absolute path it read,
    under whichever checkout ran it, so such a path matches the relative name at the same place in the repo."""
    if isinstance(archived, dict) and isinstance(current, dict):
        return archived.keys() == current.keys() and all(same_study(archived[k], current[k], folder) for k in current)
    if isinstance(archived, list) and isinstance(current, list):
        return len(archived) == len(current) and all(same_study(a, c, folder) for a, c in zip(archived, current))
    if isinstance(archived, str) and isinstance(current, str) and Path(archived).is_absolute():
        place = (folder.resolve().relative_to(ROOT) / current).as_posix()
        return archived == current or archived.endswith("/" + place)
    return archived == current


def archive_study(sweep_dir: Path, records: list[RunRecord], archive: Path) -> None:
    """Write ``archive`` (tar.xz) with the files the tables read of a complete study; the same runs give the same
    bytes (sorted members, no times or owners), so regenerating the tables leaves git with nothing to commit."""
    members = [sweep_dir / f for f in ARCHIVED_SWEEP_FILES]
    members += [r.path / f for r in records for f in ARCHIVED_RUN_FILES]
    members += [d / f for d in (sweep_dir / TUNING_DIR).glob("*/*/seed*") for f in ARCHIVED_TUNING_FILES]

    def bare(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", 0o644
        return info

    partial = archive.with_name(archive.name + ".partial")  # a crash leaves the published archive whole
    with tarfile.open(partial, "w:xz", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(m for m in members if m.is_file()):
            arcname = path.relative_to(sweep_dir).as_posix()
            if path.name != "metrics.csv":
                tar.add(path, arcname=arcname, filter=bare)
                continue
            data = evaluation_lines(path)
            info = bare(tar.gettarinfo(path, arcname=arcname))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    os.replace(partial, archive)


def evaluation_lines(metrics_csv: Path) -> bytes:
    """metrics.csv's header and its evaluation rows (a test accuracy), byte for byte: every table reads only
    those (:func:`asyncfl.study.seed_statistics.evaluations`), and a K-async run writes a row per aggregation,
    ~16 times as many (the FedHist fairness archive: 8.8 MB with them)."""
    lines = metrics_csv.read_text(encoding="utf-8").splitlines(keepends=True)
    rows = csv.reader(lines)
    column = next(rows).index("test_accuracy")
    return "".join([lines[0], *(line for line, row in zip(lines[1:], rows) if row[column])]).encode()


# --- running ---------------------------------------------------------------------------------------


def run_study(name: str, runs: Path, executor: str = "local") -> None:
    """Run (or resume) one study into <runs>/<name>; a finished sweep is left as it is.  ``executor``:
    ``local`` runs one run after the other in this process, ``ray`` one per core (asyncfl.sweep)."""
    torch.set_num_threads(1)
    study = load_study(study_file(name))
    sweep_dir = runs / name
    resume = sweep_dir if (sweep_dir / STUDY_FILE).is_file() else None
    load = check_load(True, name)  # this study's own: studies run one after another, over sessions and machines
    quiet = executor == "local"  # with ray one study at a time: its progress lines ([k/n] run) go to the log
    with StudyWallClock(sweep_dir, fresh=resume is None, load=load.fields()) as clock:
        result = run_sweep(study, resume=resume, out=None if resume else sweep_dir, executor=executor, quiet=quiet)
    print(f"{name}: {result.ran} run(s) in {clock.seconds():.0f} s, {result.skipped} reused", flush=True)
    if result.failures:
        raise SystemExit(f"{name}: {len(result.failures)} run(s) failed; see {sweep_dir}")


def run_studies(names: list[str], runs: Path, jobs: int, executor: str = "local") -> None:
    """Every study, ``jobs`` at a time in separate processes (each run inside a study is single-threaded, so
    one study per core); the order of ``names`` is the order they start in (the longest first).  With
    ``executor`` ray the studies run one after the other, each spreading its runs over every core."""
    if jobs <= 1 or executor == "ray":
        for name in names:
            run_study(name, runs, executor)
        return
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for future in [pool.submit(run_study, name, runs) for name in names]:
            future.result()  # a failed study stops the command with its error


CENTRAL_SEEDS = range(5)  # one run's accuracy is one draw: another seed or another CPU gives another


def central_baselines() -> list[dict]:
    """One client holding all of MNIST-1D's 4,000 training signals (IID): the paper's central baselines,
    one row per model and seed (``CENTRAL_SEEDS``: model init and minibatch order).
    Same settings as tests/learn/test_mnist1d.py (SGD with momentum 0.9, batch 100, 500 steps per round)."""
    from asyncfl.config import validate_scenario
    from asyncfl.runner.start import run_scenario

    settings = {"logreg": (0.1, 4, "32 %"), "mlp": (0.1, 8, "68 %"), "cnn1d": (0.05, 12, "94 %")}
    rows = []
    for (model, (lr, rounds, paper)), seed in ((m, s) for m in settings.items() for s in CENTRAL_SEEDS):
        scenario = validate_scenario({
            "name": f"central_{model}", "seed": seed,
            "data": {"dataset": "mnist1d", "clients": 1, "test_fraction": 0.0},
            "model": {"name": model, "hidden": 100, "layers": 2},  # the paper's MLP: two hidden layers of 100
            "training": {"local_steps": 500, "batch_size": 100, "lr": lr, "momentum": 0.9},
            "trainer": {"executor": "sequential"},  # one client: vmap's per-step overhead would only slow it down
            "stop": {"rounds": rounds}, "eval": {"every_rounds": rounds, "per_client": False},
            "output": {"events": "none", "plot": False}, "checkpoint": {"every_rounds": None},
        }, source=f"central {model}")  # fmt: skip
        run_dir = run_scenario(scenario, RUNS / "central" / model / f"seed{seed}", quiet=True)
        summary = read_summary(run_dir)
        rows.append({"model": model, "seed": seed, "steps": 500 * rounds, "lr": lr,
                     "test_accuracy": summary["final_accuracy"], "paper": paper,
                     "real_seconds": summary["real_seconds"]})  # fmt: skip
    return rows


# --- the half-horizon check -----------------------------------------------------------------------------


def cut_measures(
    run_dir: Path, targets: list[float], fraction: float, columns: list[str] = (), horizon: float | None = None
) -> tuple[dict[str, float], float]:
    """The accuracy measures of one run as if it had stopped at ``fraction`` of its horizon (``horizon``, by
    default the virtual time of its last evaluation), and that cut: final accuracy = the last evaluation at or
    before the cut, last-quarter accuracy = the mean of the evaluations in the last quarter before the cut, time
    to a target = the first evaluation at or above it, if that is before the cut (else NaN: the claim tests
    censor it at the cut, as a full run's miss at its end); ``columns``: other metrics.csv columns a claim names
    (``last_quarter:<column>``), averaged over the same last quarter.  A run that diverged stopped before its
    horizon (:func:`asyncfl.study.censoring.planned_horizon` gives it): where it had already broken by the cut,
    it counts as broken there, as at its end (its last evaluation is both its final and its last-quarter
    accuracy), not as the model it had at half of the time it broke."""
    rows = evaluations(run_dir)
    if not len(rows):
        return {}, math.nan
    end = float(rows["time"].iloc[-1])
    cut = fraction * (end if horizon is None else horizon)
    kept = rows[rows["time"] <= cut + 1e-9]
    if not len(kept):
        return {}, cut
    broken = horizon is not None and cut >= end - 1e-9  # diverged at or before the cut
    x, y = kept["time"].to_numpy(np.float64), kept["test_accuracy"].to_numpy(np.float64)
    tail = x >= x[-1] if broken else x >= (1 - TAIL_SHARE) * x[-1]
    out = {"final accuracy": float(y[-1]), "last-quarter accuracy": float(np.mean(y[tail]))}
    for target in targets:
        hit = kept[kept["test_accuracy"] >= target].head(1)
        out[f"time to {target:g} (virtual s)"] = float(hit["time"].iloc[0]) if len(hit) else math.nan
    for column in columns:
        values = kept[column].to_numpy(np.float64)[tail]
        out[column_label(column)] = float(np.nanmean(values)) if np.isfinite(values).any() else math.nan
    return out, cut


def cut_table(
    records: list[RunRecord], targets: list[float], fraction: float, columns: list[str], ends: dict
) -> tuple[dict, dict]:
    """(variant -> measure -> seed -> value, variant -> seed -> the cut) with every run cut at ``fraction`` of
    its horizon (a diverged run's: :func:`asyncfl.study.censoring.planned_horizon`); a run has a cut (where a
    target it has not reached by then is censored) only where it has an end in ``ends``
    (:func:`asyncfl.study.report.run_ends`: it ended, it did not fail)."""
    table: dict[str, dict[str, dict[int, float]]] = {}
    cuts: dict[str, dict[int, float]] = {}
    horizons: dict[str, list[float]] = {}
    for r in records:
        rows = evaluations(r.path)
        if len(rows) and read_summary(r.path, required=False).get("status") != "diverged":
            horizons.setdefault(r.label, []).append(float(rows["time"].iloc[-1]))
    for r in records:
        horizon = planned_horizon(r.path, horizons.get(r.label, []))
        measures, cut = cut_measures(r.path, targets, fraction, columns, horizon)
        for measure, value in measures.items():
            table.setdefault(r.label, {}).setdefault(measure, {})[r.seed] = value
        if r.seed in ends.get(r.label, {}) and math.isfinite(cut):
            cuts.setdefault(r.label, {})[r.seed] = cut
    return table, cuts


# --- tables --------------------------------------------------------------------------------------------


def complete_records(name: str) -> tuple[list[RunRecord], str]:
    """The study's evaluation runs when every run its study file plans has ended and no process is writing the
    sweep, else ([], why): a study still running, or stopped part-way, is left out of the tables rather than
    tested on the seeds it happens to have so far."""
    sweep_dir = sweep_dir_of(name)
    if not (sweep_dir / STUDY_FILE).is_file():
        return [], f"not run yet (no {STUDY_FILE} in {sweep_dir}, no published {ARCHIVE} of this study file)"
    planned = len(load_study(study_file(name)).runs)
    finished = [r for r in sweep_records(sweep_dir) if is_finished(r.path)]
    running = holder(sweep_dir)
    if running is not None or len(finished) < planned:
        still = f"; {running} is still running it" if running else ""
        return [], f"{len(finished)} of its {planned} evaluation runs have ended{still}"
    return finished, ""


def refresh_report(name: str, records: list[RunRecord], sweep_dir: Path | None = None) -> None:
    """Rewrite the sweep's report and claims (report.md, claims.*) with this code, as `python -m asyncfl report`
    does, holding the sweep: a sweep run by older code would otherwise keep the verdicts of its rule.
    ``sweep_dir``: the sweep (default the study's, :func:`sweep_dir_of`)."""
    sweep_dir = sweep_dir or sweep_dir_of(name)
    raw = read_yaml(sweep_dir / STUDY_FILE)
    with writing(sweep_dir, "sweep"):
        claims, note = sweep_claims(sweep_dir, raw)
        write_report(sweep_dir, records, raw.get("baseline"), raw.get("targets") or (), claims, note)


def refresh_published_claims(name: str, records: list[RunRecord]) -> None:
    """A study read from its published archive: its claims files (claims.csv/.md, claims_seeds.csv/.md) rewritten
    with this code into its published folder from the archived runs, and report.md's claims section with them,
    so that its per-seed pairs match its rows; the rest of its report (which needs the event logs the archive
    leaves out) stays as published."""
    sweep_dir, out = sweep_dir_of(name), RESULTS / name
    raw = read_yaml(sweep_dir / STUDY_FILE)
    claims, note = sweep_claims(sweep_dir, raw)
    columns = list(dict.fromkeys(c for c in (column_of(claim.measure) for claim in claims) if c))
    table = measure_table(records, raw.get("targets") or (), columns)
    write_claims(out, claims, note, table, records, Completeness((), ()))
    report = out / "report.md"
    if report.is_file():
        claims_md = (out / "claims.md").read_text("utf-8")
        write_atomic(report, with_section(report.read_text("utf-8"), CLAIMS_HEADING, claims_md))


CLAIMS_HEADING = "## Declared claims"  # write_report's section of report.md


def with_section(text: str, heading: str, body: str) -> str:
    """``text`` with the body of its section ``heading`` (up to the next "## " heading) replaced by ``body``;
    ``text`` as it is when it has no such section."""
    start = text.find(heading + "\n")
    if start < 0:
        return text
    end = text.find("\n## ", start + len(heading))
    rest = text[end + 1 :] if end >= 0 else ""
    return text[:start] + heading + "\n\n" + body + ("\n" + rest if rest else "")


def study_claim_rows(
    name: str, records: list[RunRecord], sweep_dir: Path | None = None
) -> tuple[list[Claim], list[dict], list[dict], dict]:
    """The study's claims, tested as the study's own report tests them (a time to a target a run never
    reached censored at its horizon, a diverged run's included; the paper's effect tested only on the paper's
    data), on the full runs and on the runs cut at half their horizon (a miss censored at the cut).
    ``sweep_dir``: as :func:`refresh_report`."""
    sweep_dir = sweep_dir or sweep_dir_of(name)
    raw = read_yaml(sweep_dir / STUDY_FILE)
    claims, _ = sweep_claims(sweep_dir, raw)  # those recorded at the sweep's start, as its report tests
    targets = [float(t) for t in raw.get("targets") or ()]
    columns = list(dict.fromkeys(c for c in (column_of(claim.measure) for claim in claims) if c))
    table = measure_table(records, targets, columns)
    ends, datasets = run_ends(records), run_datasets(records)
    full = claim_rows(claims, table, run_horizons(records), datasets)
    half_table, cuts = cut_table(records, targets, HALF, columns, ends)
    half = claim_rows(claims, half_table, cuts, datasets)
    return claims, full, half, table


def variant_cell(row: dict, side: str) -> str:
    """One variant of a claim (``side``: variant or versus): its mean ± 95 % t-interval over the claim's pairs,
    as claims.csv has it; for a time to a target the restricted mean (RMST: a miss counts as its run's horizon)
    over every pair and on how many the variant reached it, so the two cells subtract to the difference."""
    cell = f"{row[side]} {format_interval(row[side + '_mean'], row[side + '_ci_half_width'])}"
    if row["unit"] != "virtual s":
        return f"{cell} (n = {row['pairs']})"
    k, n = row[side + "_reached"].split("/")
    return f"{cell} (RMST; reached on {k} of {n})"


def paper_effect_cell(row: dict, unit: str) -> str:
    """The paper's effect and what became of it: inside or outside our interval where it was tested (the
    paper's data), else why it is context only."""
    if row["paper_effect"] is None:
        return "—"
    effect = f"{row['paper_effect']:+g} {unit}"
    if row["paper_effect_inside"]:
        return f"{effect}: {'inside' if row['paper_effect_inside'] == 'yes' else 'outside'} our interval"
    return f"{effect} ({row['paper_comparison'] or 'context only: too few pairs'})"


INTERVAL = f"difference [{1 - 2 * ALPHA:.0%} sign-flip interval]"  # claim_markdown's column


def paper_families(entries: list[tuple[str, Claim, dict, dict, dict]]) -> list[str]:
    """Per entry (a claim row of one paper's studies), Holm over its declared family across ALL the paper's
    studies: a figure or table whose claims are split over several study files (FedHist's Fig. 5 at N/K = 10
    and 25, its Table I at N/K = 10 and 100) is one family, as a reviewer counts it.  A member is a claim, or
    a claim tested at every axis value (its rows: the largest p in its direction, the smallest times their
    number on the other side, as each study counts it).  The cell: "p (other side): verdict (family, tests,
    studies)", or "as declared" where the family lies within one study."""
    members: dict[str, dict[tuple, list[int]]] = {}
    for i, (study, claim, row, _, _) in enumerate(entries):
        key = (study, *claim.declared) if claim.axis and claim.across_axis == "every" else (study, i)
        members.setdefault(row["family"], {}).setdefault(key, []).append(i)
    cells = [""] * len(entries)
    for family, units in members.items():
        studies = {key[0] for key in units}
        if len(studies) < 2:
            for unit in units.values():
                for i in unit:
                    cells[i] = "as declared"
            continue
        groups = list(units.values())
        claimed = holm([max(entries[i][2]["p_sign_flip"] for i in g) for g in groups])
        other = holm([min(1.0, len(g) * min(entries[i][2]["p_other_side"] for i in g)) for g in groups])
        for g, p, q in zip(groups, claimed, other):
            word = "supported" if p < ALPHA else "contradicted" if q < ALPHA else "inconclusive"
            for i in g:
                cells[i] = f"{p:.4f} ({q:.4f}): {word} ({family}, {len(groups)} tests, {len(studies)} studies)"
    return cells


def claim_table(entries: list[tuple[str, Claim, dict, dict, dict]]) -> str:
    """One paper's claims, a row per claim (and sensitivity-axis value): each variant's mean, the paired
    difference and its 90 % sign-flip interval, the Holm p in the claim's direction and on the other side
    with the declared family and its size, the verdict (the same rule both ways) and beside it the Holm p and
    verdict over every claim of the study, where a study declares a sensitivity axis
    the verdict across it ("depends on <axis> (...)" where it differs), the paper's figures and effect, the
    verdict at half the horizon, and a link to the study's per-seed pairs (claims_seeds.md)."""
    axis = any("verdict_across_axis" in row for _, _, row, _, _ in entries)
    across_studies = paper_families(entries)
    cells = []
    for (study, claim, row, half_row, _table), across in zip(entries, across_studies):
        (shown,) = claim_markdown([row])
        unit = "s" if row["unit"] == "virtual s" else "pts"
        pairs = str(row["pairs"])
        if row["variant_reached"]:
            pairs += f" (reached {row['variant_reached']}, {row['versus_reached']})"
        same = half_row["verdict"] == row["verdict"]
        cells.append({
            "study": study, "claim": shown["claim"], "measure": shown["measure"],
            "each variant: mean ± 95 % t-interval": variant_cell(row, "variant") + " vs " + variant_cell(row, "versus"),
            "pairs": pairs,
            INTERVAL: shown[INTERVAL],
            "Holm p (other side; declared family (tests))": f"{row['p_holm']:.4f} ({row['p_holm_other_side']:.4f}; "
            f"{shown['family (tests)']})",
            "verdict (declared family)": f"**{row['verdict']}**",
            "study-wide Holm p: verdict": f"{row['p_holm_study']:.4f}: {row['verdict_study']}",
        })  # fmt: skip
        if axis:
            cells[-1]["verdict across the axis"] = row.get("verdict_across_axis", "—")
        cells[-1]["Holm over the family in all the paper's studies"] = across
        cells[-1].update({
            "paper (source)": f"{claim.paper_numbers or '—'} ({claim.source or 'ours'})",
            "paper's effect": paper_effect_cell(row, unit),
            "at half horizon": "same" if same else f"**{half_row['verdict']}**",
            "per seed": f"[pairs](../results/papers/{study}/claims_seeds.md)",
        })  # fmt: skip
    return markdown(cells)


def merge_section(published: Path, complete: str, studies: list[str]) -> str | None:
    """A section's claims table while some of its studies still run: the rows of its complete studies as
    ``complete`` (claim_table) has them, every other study's rows as ``published`` has them, in the order of
    ``studies`` (so a study's per-seed link never shows other numbers than its row).  None where the two
    tables' columns differ or nothing is published: the published table then stays whole."""
    if not published.is_file():
        return None
    old, new = published.read_text(encoding="utf-8").splitlines(), complete.splitlines()
    if len(old) < 2 or old[:2] != new[:2]:
        return None

    def study_of(line: str) -> str:
        return line.split("|")[1].strip()

    fresh = {study_of(line) for line in new[2:]}
    rows = [line for line in old[2:] if study_of(line) not in fresh] + new[2:]
    order = {name: i for i, name in enumerate(studies)}
    rows.sort(key=lambda line: order.get(study_of(line), len(order)))  # stable: each study's own order kept
    return "\n".join(new[:2] + rows) + "\n"


def short(values: dict) -> str:
    """A grid point in a table cell: each key's last part and its value (lr 0.1, server_lr 5.0)."""
    return ", ".join(f"{key.split('.')[-1]} {value}" for key, value in values.items())


def chosen_cell(record: dict) -> str:
    """Each tuned variant's chosen point (tuned.yaml's ``record``), in a table cell."""
    return "; ".join(f"{variant}: {short(values)}" for variant, values in record["chosen"].items())


def tuning_table(studies: list[str]) -> str:
    """Per study: the grid (and the values widening added), the tuning seeds, the criterion and rule, each
    variant's chosen values and the choices that were near ties (asyncfl.study.tuning_results.near_ties), from
    the study's published tuned.yaml and tuning.csv (docs/results/papers/<study>/): the choice behind its
    published section, complete or not, whether or not its runs are still on this machine."""
    rows = []
    for name in studies:
        path = RESULTS / name / TUNED_FILE
        if not path.is_file():
            rows.append({"study": name, "tuned on seeds": "—", "grid": "not tuned", "criterion": "—", "chosen": "—"})
            continue
        record = yaml.safe_load(path.read_text(encoding="utf-8"))
        raw = read_yaml(study_file(name))
        chosen = chosen_cell(record)
        untuned = record.get("untuned") or []
        if untuned:
            chosen += f"; not tuned: {', '.join(untuned)}"
        grid = "; ".join(f"`{k}` ∈ {v}" for k, v in record["grid"].items())
        added: dict[str, list[str]] = {}
        for w in record.get("widened") or []:
            added.setdefault(w["variant"], []).append(f"{w['key'].split('.')[-1]} {w['value']}")
        if added:
            grid += "; widened: " + "; ".join(f"{v} {', '.join(values)}" for v, values in added.items())
        rule = record.get("rule", "mean")
        ties = near_ties(record, tuning_rows(RESULTS / name))
        rows.append({
            "study": name, "tuned on seeds": ", ".join(map(str, record["seeds"])),
            "evaluated on seeds": ", ".join(map(str, published_seeds(name, raw))), "grid": grid,
            "criterion": record["criterion"] + (f" ({rule})" if rule != "mean" else ""), "chosen": chosen,
            "near ties (advantage ± SE)": "; ".join(
                f"{t.variant}: {short(t.chosen)} over {short(t.runner_up)} ({t.advantage:+.3g} ± {t.se:.2g})"
                for t in ties
            ) or "none",
        })  # fmt: skip
    return markdown(rows)


def published_seeds(name: str, raw: dict) -> list[int]:
    """The evaluation seeds of the study as published (the study.yaml in its runs.tar.xz), which the tuning
    table's choices (its published tuned.yaml) belong to: the study file may declare others for a rerun that
    has not ended; ``raw``'s (the study file's) where nothing is published."""
    archive = RESULTS / name / ARCHIVE
    if archive.is_file():
        with tarfile.open(archive) as tar:
            member = next((m for m in tar.getmembers() if m.name == STUDY_FILE), None)
            if member is not None:
                return list(yaml.safe_load(tar.extractfile(member).read()).get("seeds") or [])
    return list(raw.get("seeds") or [])


def run_seconds(records: list[RunRecord], sweep_dir: Path) -> tuple[int, float, float, set[str]]:
    """(runs, summed run seconds, longest run, the CPUs they ran on) over the evaluation and the tuning runs;
    a run from before summary.json recorded its machine counts as "not recorded"."""
    dirs = [r.path for r in records] + sorted((sweep_dir / TUNING_DIR).glob("*/*/seed*"))
    seconds, cpus = [], set()
    for d in dirs:
        if (d / "summary.json").is_file():
            summary = read_summary(d)
            seconds.append(float(summary.get("real_seconds") or 0.0))
            cpus.add((summary.get("machine") or {}).get("cpu", "not recorded"))
    return len(seconds), sum(seconds), max(seconds, default=0.0), cpus


def fedar_rows(name: str, records: list[RunRecord]) -> list[dict]:
    """FedAR's cutoff per run: rounds with an exclusion, excluded client-rounds, mean N_t, and (when the run
    records it) its mean server-step scale sum(psi) / N_t."""
    out = []
    for r in records:
        path = r.path / "fedar_exclusions.csv"
        if not path.is_file():
            continue
        frame = pd.read_csv(path, keep_default_na=False)
        excluded = [str(e).split() for e in frame["excluded"]]
        row = {"study": name, "variant": r.label, "seed": r.seed, "rounds": len(frame),
               "rounds_with_exclusions": sum(1 for e in excluded if e),
               "excluded_client_rounds": sum(len(e) for e in excluded),
               "clients_ever_excluded": len({c for e in excluded for c in e}),
               "mean_n_t": float(frame["n_t"].astype(float).mean())}  # fmt: skip
        for column in frame.columns:
            if column not in ("round", "excluded", "n_t"):
                values = pd.to_numeric(frame[column], errors="coerce")
                if values.notna().any():
                    row[f"mean_{column}"] = float(values.mean())
        out.append(row)
    return out


def exclusions_table(rows: list[dict]) -> str:
    keys = [k for k in rows[0] if k not in ("study", "variant", "seed", "rounds")]
    lines = []
    for (study, variant), group in pd.DataFrame(rows).groupby(["study", "variant"], sort=False):
        cell = {"study": study, "variant": variant, "rounds": f"{int(group['rounds'].max())}"}
        for k in keys:
            interval = t_interval(group[k].astype(float).tolist()) if k in group else None
            cell[k.replace("_", " ")] = (
                format_interval(interval.mean, interval.half_width, 1, 2) if interval and interval.n else "—"
            )
        lines.append(cell)
    return markdown(lines)


def diagnostics_table(rows: list[dict]) -> str:
    """FedHist's utility evaluations per study and variant: mean ± 95 % CI over seeds."""
    keys = ("evaluated_fraction", "mean_fresh", "mean_staleness")
    cells = []
    for (study, variant), group in pd.DataFrame(rows).groupby(["study", "variant"], sort=False):
        cell = {"study": study, "variant": variant, "seeds": str(len(group))}
        for key, label in zip(keys, ("rounds that evaluated utilities (%)", "mean |S|", "mean staleness (rounds)")):
            interval = t_interval(group[key].astype(float).tolist())
            scale = 100.0 if key == "evaluated_fraction" else 1.0
            cell[label] = format_interval(interval.mean, interval.half_width, scale, 1)
        cells.append(cell)
    return markdown(cells)


def central_table() -> str | None:
    central = RESULTS / "central_baselines.csv"
    if not central.is_file():
        return None
    frame = pd.read_csv(central)
    rows = []
    for model, mine in frame.groupby("model", sort=False):
        accuracies = mine["test_accuracy"].astype(float).tolist()
        cell = t_interval(accuracies)
        rows.append({
            "model": model, "SGD steps (batch 100)": f"{int(mine['steps'].iloc[0]):,}",
            f"test accuracy, mean ± 95 % CI over {len(accuracies)} seeds":
                f"{format_interval(cell.mean, cell.half_width, 100)} %",
            "min – max": f"{100 * min(accuracies):.1f} – {100 * max(accuracies):.1f} %", "paper": mine["paper"].iloc[0],
        })  # fmt: skip
    return markdown(rows)


def section_of(study: str) -> str:
    """The page section whose claims table (docs/figures/papers_<section>.md) shows a study: its paper's, or
    FedHist's fairness experiment (Fig. 5: another measure, data set and tuning) on its own."""
    return "fedhist_fairness" if study.startswith("fedhist_fairness") else paper_of(study)


def weights_table(shares: pd.DataFrame) -> str:
    """Weight shares per study, variant and client group (each sweep's weight_shares.csv), in percent: the
    holders of an isolated class against the others where the data have one (the groups a fairness claim is
    about), else the speed quartiles (every grouping is in each study's weight_shares.csv)."""
    if (shares["grouping"] == ISOLATED_CLASS).any():
        shares = shares[shares["grouping"] == ISOLATED_CLASS]
    return markdown([{"study": study, **cells} for study, cells in zip(shares["study"], weight_cells(shares))])


def write_tables(studies: list[str]) -> None:
    """The tables of every complete study (:func:`complete_records`).  A section's tables (its claims, FedAR's
    exclusions, FedHist's diagnostics) are rewritten only when all of its studies are complete, and the tables
    over every study (tuning, compute, claims.csv) only when all are: a study still running leaves the
    published ones as they are (it says which), instead of a page that mixes a finished study's rows with
    another's missing ones.  The exception is a section's claims and weight-share tables, where a complete study's rows
    replace its published ones beside the others' published rows (:func:`merge_section`): its per-seed pairs,
    already rewritten, must match its rows.  The tuning table is always rewritten, from each study's published
    tuned.yaml: the choices behind the sections as published."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    by_section: dict[str, list] = {}
    weights: dict[str, list] = {}
    all_claims, compute, excl, diagnostics, done, pending = [], [], [], [], [], []
    for name in studies:
        records, why = complete_records(name)
        if not records:
            print(f"{name}: {why}; its tables are left as published")
            pending.append(name)
            continue
        restored = name in _restored
        if restored:  # its report needs the event logs the archive leaves out: the published one stays
            print(f"{name}: tables from its published {ARCHIVE}; its report left as published but its claims")
            refresh_published_claims(name, records)
        else:
            refresh_report(name, records)
        done.append(name)
        claims, full, half, table = study_claim_rows(name, records)
        for claim, row, half_row in zip(claims, full, half):
            by_section.setdefault(section_of(name), []).append((name, claim, row, half_row, table))
            all_claims.append({"study": name, **row, "verdict_half_horizon": half_row["verdict"],
                               "diff_mean_half_horizon": half_row["diff_mean"]})  # fmt: skip
        sweep_dir = sweep_dir_of(name)
        (RESULTS / name).mkdir(parents=True, exist_ok=True)
        for file in () if restored else COPIED:
            if (sweep_dir / file).is_file():
                shutil.copyfile(sweep_dir / file, RESULTS / name / file)
        if not restored:
            archive_study(sweep_dir, records, RESULTS / name / ARCHIVE)
        if (sweep_dir / "weight_shares.csv").is_file():
            shares = pd.read_csv(sweep_dir / "weight_shares.csv").assign(study=name)
            weights.setdefault(section_of(name), []).append(shares)
        runs, total, longest, cpus = run_seconds(records, sweep_dir)
        wall = read_record(sweep_dir) or {}
        compute.append({"study": name, "runs": runs, "wall_seconds": wall.get("wall_seconds", math.nan),
                        "commands": wall.get("commands", 1), "run_seconds_total": total,
                        "run_seconds_max": longest, "load": _load(wall.get("load")),
                        "cpu": "; ".join(sorted(cpus))})  # fmt: skip
        excl += fedar_rows(name, records)
        for r in records:
            path = r.path / "fedhist_diagnostics.csv"
            if path.is_file():
                for row in pd.read_csv(path).to_dict("records"):
                    diagnostics.append({"study": name, "variant": r.label, "seed": r.seed, **row})
    waiting = {section_of(name) for name in pending}
    for section, entries in by_section.items():
        tables = {f"papers_{section}.md": claim_table(entries)}
        if section in weights:
            tables[f"papers_{section}_weights.md"] = weights_table(pd.concat(weights[section], ignore_index=True))
        for file, table in tables.items():
            if section in waiting:  # a complete study's rows beside the others' published ones
                table = merge_section(PLOTS / file, table, studies)
                if table is None:
                    print(f"docs/figures/{file} left as published: not every study of it is complete")
                    continue
            (PLOTS / file).write_text(table, encoding="utf-8")
            print(
                f"wrote docs/figures/{file}"
                + (": complete studies' rows, others' as published" if section in waiting else "")
            )
    for paper, name, rows, table in (("fedar", "fedar_exclusions", excl, exclusions_table),
                                     ("fedhist", "fedhist_diagnostics", diagnostics, diagnostics_table)):  # fmt: skip
        if rows and not {section_of(s) for s in studies if paper_of(s) == paper} & waiting:  # its paper's sections
            write_csv(RESULTS / f"{name}.csv", rows, digits=6)
            (PLOTS / f"papers_{name}.md").write_text(table(rows), encoding="utf-8")
            print(f"wrote docs/figures/papers_{name}.md")
    (PLOTS / "papers_tuning.md").write_text(tuning_table(list(studies)), encoding="utf-8")  # published choices
    if pending:
        print(f"the tables over every study (compute, claims.csv) left as published: "
              f"{len(pending)} of {len(studies)} studies are not complete ({', '.join(pending)})")  # fmt: skip
        return
    for file, rows in (("claims.csv", all_claims), ("compute.csv", compute)):
        write_csv(RESULTS / file, rows, digits=6)
    central = central_table()
    if central:
        (PLOTS / "papers_central.md").write_text(central, encoding="utf-8")
    if compute:
        total_wall = sum(c["wall_seconds"] for c in compute if math.isfinite(c["wall_seconds"]))
        rows = [{"study": c["study"], "runs (tuning + evaluation)": str(c["runs"]),
                 "wall time of the study (s)": _seconds(c["wall_seconds"], c["commands"]),
                 "run seconds, total": f"{c['run_seconds_total']:,.0f}",
                 "longest run (s)": f"{c['run_seconds_max']:.0f}",
                 "load at its start (1 min, per core)": c["load"], "CPU": c["cpu"]}
                for c in compute]  # fmt: skip
        rows.append({"study": "**all**", "runs (tuning + evaluation)": str(sum(c["runs"] for c in compute)),
                     "wall time of the study (s)": f"{total_wall:,.0f}",
                     "run seconds, total": f"{sum(c['run_seconds_total'] for c in compute):,.0f}",
                     "longest run (s)": f"{max(c['run_seconds_max'] for c in compute):.0f}",
                     "load at its start (1 min, per core)": "", "CPU": ""})  # fmt: skip
        (PLOTS / "papers_compute.md").write_text(markdown(rows) + COMPUTE_NOTE, encoding="utf-8")
    changed = [c for c in all_claims if c["verdict"] != c["verdict_half_horizon"]]
    print(f"{len(all_claims)} claims; {len(changed)} with another verdict at half the horizon")


def followup_command(name: str) -> str:
    """The command that runs follow-up ``name`` (the one its declaring commit names)."""
    study, overrides = FOLLOWUPS[name]
    sets = " ".join(f"--set {shlex.quote(o)}" for o in overrides)
    return (f"python -m asyncfl scenarios/papers/{study}.yaml --executor ray {sets} "
            f"--out runs/papers_followups/{name}")  # fmt: skip


def followup_sweep_dir(name: str) -> tuple[Path, bool]:
    """(the follow-up's sweep, whether it was restored): runs/papers_followups/<name>, or, where that holds no
    sweep, its published runs.tar.xz unpacked into a temporary folder when it holds runs of the study file
    with the same overrides (as :func:`sweep_dir_of` does for a study)."""
    study, overrides = FOLLOWUPS[name]
    own = RUNS.parent / "papers_followups" / name
    archive = RESULTS / FOLLOWUP_RESULTS / name / ARCHIVE
    if (own / STUDY_FILE).is_file() or not archive.is_file():
        return own, False
    current = read_yaml(study_file(study))
    for item in overrides:
        apply_override(current, item)
    into = unpacked(archive, current, study_file(study).parent, name)
    if into is None:
        print(
            f"follow-up {name}: its published {ARCHIVE} holds runs of another {study}.yaml or other overrides; not used"
        )
        return own, False
    return into, True


def write_followups() -> None:
    """Each complete follow-up (:data:`FOLLOWUPS`): its report rewritten with this code, its files and its
    runs.tar.xz (:func:`archive_study`) written to docs/results/papers/followups/<name>/, and its claims table,
    in the papers' format, with its tuning choices and its compute to docs/figures/papers_followup_<name>.md.
    One read from its published archive keeps its report as published; an incomplete one is left as published
    (it says so)."""
    for name, (study, overrides) in FOLLOWUPS.items():
        sweep_dir, restored = followup_sweep_dir(name)
        planned = len(load_study(study_file(study), list(overrides)).runs)
        records = [r for r in sweep_records(sweep_dir) if is_finished(r.path)] if sweep_dir.is_dir() else []
        if len(records) < planned or holder(sweep_dir) is not None:
            print(f"follow-up {name}: {len(records)} of its {planned} evaluation runs have ended; left as published")
            continue
        if not restored:  # a restored sweep lacks the event logs its report reads: the published one stays
            refresh_report(name, records, sweep_dir)
        claims, full, half, table = study_claim_rows(name, records, sweep_dir)
        label = f"{FOLLOWUP_RESULTS}/{name}"  # the study column, and where its per-seed pairs are
        results = RESULTS / label
        results.mkdir(parents=True, exist_ok=True)
        for file in () if restored else COPIED:
            if (sweep_dir / file).is_file():
                shutil.copyfile(sweep_dir / file, results / file)
        if not restored:
            archive_study(sweep_dir, records, results / ARCHIVE)
        record = yaml.safe_load((sweep_dir / TUNED_FILE).read_text(encoding="utf-8"))
        chosen = chosen_cell(record)
        runs, total, _, cpus = run_seconds(records, sweep_dir)
        text = (
            f"Run by `{followup_command(name)}`. Chosen (tuning seeds {', '.join(map(str, record['seeds']))}): "
            f"{chosen}. {runs} runs (tuning + evaluation), {total:,.0f} run-seconds, on {'; '.join(sorted(cpus))}."
            "\n\n" + claim_table([(label, c, r, h, table) for c, r, h in zip(claims, full, half)])
        )
        (PLOTS / f"papers_followup_{name}.md").write_text(text, encoding="utf-8")
        print(f"wrote docs/figures/papers_followup_{name}.md")


def _seconds(value: float, commands: int = 1) -> str:
    if not math.isfinite(value):
        return "— (not recorded)"
    return f"{value:,.0f}" + (f" ({commands} commands)" if commands > 1 else "")


def _load(fields: dict[str, str] | None) -> str:
    """A study's load at its start, from :meth:`Load.fields` (forced: it started on a busy machine)."""
    if not fields:
        return "not recorded"
    per_core = float(fields["load_1min"]) / int(fields["cores"])
    return f"{per_core:.2f}" + (" (busy)" if fields["forced"] == "true" else "")


COMPUTE_NOTE = (
    "\nMachine: each study's load is the 1-minute load average per core when it started (busy: above the "
    "threshold of benchmarks/tools/quiet_machine.py, often with the study before it); the CPU is what its runs' "
    "summary.json record. A study run over several commands (stopped, then resumed) has the sum of theirs, the runs a "
    "stop cut short and their reruns included; one resumed from before this was recorded has none.\n"
)


def main(argv: list[str] | None = None) -> int:
    global RUNS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables-only", action="store_true", help="no runs: tables from runs/papers as it is")
    parser.add_argument("--central", action="store_true", help="also run the MNIST-1D central baselines")
    parser.add_argument("--only", nargs="*", default=None, metavar="STUDY", help="run only these studies")
    parser.add_argument("--runs-dir", type=Path, default=RUNS, help=f"where the sweeps go (default {RUNS})")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="studies run side by side, each in its own process (default: one per core)",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: --jobs studies side by side, each one run at a time; ray: one study at a time, its runs "
        "spread over every core (a killed command resumes where it stopped when run again)",
    )
    add_force_argument(parser)
    args = parser.parse_args(argv)
    RUNS = args.runs_dir.resolve()
    torch.set_num_threads(1)
    started = time.perf_counter()
    if not args.tables_only:  # the tables of --tables-only quote the load their runs were measured at
        check_load(args.force, "docs/results/papers/ and docs/figures/papers_*.md")  # each study records its own
        RUNS.mkdir(parents=True, exist_ok=True)
        run_studies(args.only if args.only is not None else list(STUDIES), RUNS, args.jobs, args.executor)
        if args.central:
            write_csv(RESULTS / "central_baselines.csv", central_baselines(), digits=6)
    write_tables(list(STUDIES))
    write_followups()
    print(f"reproduce_papers: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
