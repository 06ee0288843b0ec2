"""Run every variant x seed of a study, locally or as Ray tasks, and write the comparison.

Layout (the same whichever executor ran it)::

    <output.dir>/<name>/<timestamp>/      the sweep directory
        study.yaml                        the study as run (compare, seeds, targets, base keys)
        declared_claims.yaml              the claims: the sweep started with (report tests these)
        <variant>/seed<N>/                one ordinary run directory per variant x seed
        tuning/<variant>/<point>/seed<K>/ with tune: the tuning runs (run first), tuning.csv, tuned.yaml
        <variant>~<measure>/seed<N>/      with tune: a variant's runs with the point tuned on another of its
                                          claims' measures, where it differs (asyncfl.study.tuning)
        comparison.csv, runs.csv, time_to_target.csv/.md, client_accuracy.csv/.md, *.png
        noise_floor/<cap>/<variant>/seed<N>/ with noise_floor: the reruns under CPU kernel sets
        report.csv, report.md             mean ± 95 % CI over seeds, paired differences vs ``baseline:``
        claims.csv, claims.md             with ``claims:``: each declared claim tested (asyncfl.study.claims)

A run is finished when its summary.json holds a final status (finished, target_reached,
diverged; not interrupted, out_of_memory or failed).  ``--resume SWEEP_DIR`` skips finished runs; with the
local executor an unfinished run that has a checkpoint continues from it (``asyncfl.runner.checkpoint``),
every other one is redone (its partial directory is deleted first).  Ray tasks write a run directory only
when it is complete.
A finished run whose config.yaml disagrees with the study is an error, so a resumed sweep never
mixes two settings under one variant name; nor may it change the study's ``claims:``, which were
declared before the runs and are recorded in declared_claims.yaml when the sweep starts.  One process
at a time writes a sweep directory (and each of its runs): see :func:`asyncfl.output.lock.writing`.
"""

from __future__ import annotations

import shutil
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Sequence

import yaml

from asyncfl.errors import ConfigError
from asyncfl.output.folders import make_directory, missing_directories, remove_empty
from asyncfl.output.lock import writing
from asyncfl.output.reading import has_table
from asyncfl.output.run_directory import CHECKPOINT_FILE as CHECKPOINT
from asyncfl.output.run_directory import new_run_dir, refuse_used_out
from asyncfl.output.writing import write_atomic
from asyncfl.sections import resolved_dump
from asyncfl.study.claims import DECLARED_FILE, declared_claims, record_claims
from asyncfl.study.compare import STUDY_FILE, is_finished, write_comparison
from asyncfl.study.completeness import study_completeness
from asyncfl.study.noise_floor import NoiseRun, noise_runs
from asyncfl.study.report import write_report
from asyncfl.study.seed_statistics import RunRecord
from asyncfl.study.spec import RunSpec, Study
from asyncfl.study.tuned_sets import evaluation_sets, split_choice
from asyncfl.study.tuning import TUNED_FILE, TuningPlan, TuningRun, tuned_scenario, widen
from asyncfl.study.tuning_results import choose_each, write_choice
from asyncfl.sweep.jobs import Job, run_locally
from asyncfl.sweep.ray_executor import check_ray, run_on_ray


@dataclass
class SweepResult:
    sweep_dir: Path
    ran: int
    skipped: int
    failures: list[tuple[Job, str]]


def run_sweep(
    study: Study,
    resume: Path | None = None,
    out: Path | None = None,
    executor: str = "local",
    address: str | None = None,
    gpus_per_task: float = 0.0,
    cpus_per_task: float = 1.0,
    quiet: bool = False,
) -> SweepResult:
    """Run ``study`` (into ``out``, a new sweep directory, or resuming ``resume``) and write its comparison.
    The sweep directory is held (:func:`asyncfl.output.lock.writing`) from before anything is written
    in it until the comparison is written; an executor that cannot run fails before anything is made."""
    if executor == "ray":
        check_ray(gpus_per_task, cpus_per_task)
    elif executor != "local":
        raise ConfigError(f"--executor {executor!r}: allowed: local, ray.")
    with _prepare(study, resume, out) as sweep_dir:
        return _run_held(study, sweep_dir, executor, address, gpus_per_task, cpus_per_task, quiet)


def _run_held(
    study: Study, sweep_dir: Path, executor: str, address: str | None, gpus: float, cpus: float, quiet: bool
) -> SweepResult:
    log = (lambda msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    done, before = 0, 0
    if study.tuning is not None:  # phase 1: the tuning runs, whose results choose the evaluation runs' values
        jobs, skipped = plan_jobs(study, sweep_dir, executor == "local", runs=study.tuning.runs)
        log(f"sweep {sweep_dir}: {len(jobs)} tuning run(s) to do, {skipped} already finished")
        failures = _execute(jobs, sweep_dir, executor, address, gpus, cpus, log)
        if failures:
            log("tuning runs failed: no evaluation runs until they finish (--resume)")
            return SweepResult(sweep_dir, len(jobs) - len(failures), skipped, failures)
        plan = study.tuning
        choice = choose_each(plan, sweep_dir)  # written once the last widening round is in (below)
        for round_ in range(1, plan.spec.widen_max + 1 if plan.spec.widen else 1):
            first, others = split_choice(choice[0])
            wider = widen(plan, first, round_, others)  # a choice at a grid edge: one point beyond it, choose again
            if wider is None:
                break
            plan, extra = wider, wider.runs[len(plan.runs) :]
            jobs, done_before = plan_jobs(study, sweep_dir, executor == "local", runs=extra)
            log(f"widening {round_}: {len(jobs)} tuning run(s) beyond the grid's edge, {done_before} already finished")
            more = _execute(jobs, sweep_dir, executor, address, gpus, cpus, log)
            skipped += done_before
            if more:
                log("tuning runs failed: no evaluation runs until they finish (--resume)")
                return SweepResult(sweep_dir, len(jobs) - len(more), skipped, more)
            choice = choose_each(plan, sweep_dir)
        # Only now: a resume stopped between rounds would otherwise leave tuned.yaml at a first round's choice
        # that the evaluation runs, made with the widened one, contradict.
        chosen = write_choice(plan, sweep_dir, choice=choice)
        log(f"tuned ({TUNED_FILE}): {chosen}" + "".join(
            f"; {name} on {m}: {point}" for name, others in split_choice(choice[0])[1].items()
            for m, point in zip(plan.also.get(name, ()), others)
        ))  # fmt: skip
        study = replace(study, runs=tuple(
            RunSpec(r.variant, r.seed, tuned_scenario(plan, r.variant, r.seed, chosen))
            if r.variant in chosen else r for r in study.runs
        ))  # fmt: skip
        study = _with_measure_sets(study, plan, choice[0])
        done, before = len(plan.runs) - skipped, skipped
    jobs, skipped = plan_jobs(study, sweep_dir, keep_checkpoints=executor == "local")
    log(f"sweep {sweep_dir}: {len(jobs)} run(s) to do, {skipped} already finished")
    failures = _execute(jobs, sweep_dir, executor, address, gpus, cpus, log)
    skipped += before
    noise = noise_runs(study.noise_floor, study.runs)  # noise_floor: in subprocesses, whatever the executor
    if noise:
        noise_jobs, noise_done = plan_jobs(study, sweep_dir, runs=noise)
        log(f"noise floor: {len(noise_jobs)} run(s) under CPU kernel sets to do, {noise_done} already finished")
        failures += run_locally(noise_jobs, log)
        jobs, skipped = jobs + noise_jobs, skipped + noise_done
    records = [RunRecord(r.variant, r.seed, sweep_dir / r.rel_dir) for r in study.runs]
    write_comparison(sweep_dir, records, study.targets, title=study.name)
    finished = [r for r in records if has_table(r.path / "metrics.csv")]
    completeness = study_completeness(sweep_dir, study.variants, study.seeds)
    with_results = {r.label for r in finished if not completeness.is_gap(r.label, r.seed)}
    write_report(sweep_dir, finished, study.baseline if study.baseline in with_results else None,
                 study.targets, study.claims, completeness=completeness)  # fmt: skip
    return SweepResult(sweep_dir, done + len(jobs) - len(failures), skipped, failures)


def _with_measure_sets(study: Study, plan: TuningPlan, each: dict[str, dict[str, dict]]) -> Study:
    """``study`` with the evaluation runs of each variant tuned on several measures whose point on a later one
    differs from that on its first (:func:`asyncfl.study.tuned_sets.evaluation_sets`): runs of their own."""
    sets = {
        name: (variant, each[variant][m]) for (variant, m), name in evaluation_sets(each).items() if name != variant
    }
    runs = [RunSpec(name, seed, tuned_scenario(plan, variant, seed, {variant: point}))
            for name, (variant, point) in sets.items() for seed in study.seeds]  # fmt: skip
    return replace(study, runs=study.runs + tuple(runs), variants=study.variants + tuple(sets))


def _execute(
    jobs: list[Job], sweep_dir: Path, executor: str, address: str | None, gpus: float, cpus: float, log
) -> list[tuple[Job, str]]:
    try:
        if executor == "ray":
            return run_on_ray(jobs, address, gpus, cpus, log)
        return run_locally(jobs, log)
    except KeyboardInterrupt:
        print(f"interrupted; continue with: python -m asyncfl run --resume {sweep_dir}", file=sys.stderr)
        raise


@contextmanager
def _prepare(study: Study, resume: Path | None, out: Path | None) -> Iterator[Path]:
    """The sweep directory, held, with study.yaml written; a directory made here and refused (another
    process writes it) is removed again."""
    made: list[Path] = []
    if out is not None:
        refuse_used_out(out, "use --resume to continue a sweep.")
        made = make_directory(out, "--out")
        sweep_dir = out
    elif resume is None:
        made = missing_directories(study.output_dir / study.name)
        sweep_dir = new_run_dir(study.output_dir, study.name)
        made.insert(0, sweep_dir)
    else:
        if not resume.is_dir():
            raise ConfigError(f"--resume {resume}: no such sweep directory.")
        sweep_dir = resume
    with ExitStack() as held:
        try:
            held.enter_context(writing(sweep_dir, "sweep"))
        except ConfigError:
            remove_empty(made)
            raise
        if resume is not None:
            _refuse_changed_claims(sweep_dir, study.raw.get("claims"))
        # what report tests, whatever study.yaml says later
        record_claims(sweep_dir, study.raw.get("claims"), study.raw.get("families"))
        write_atomic(sweep_dir / STUDY_FILE, yaml.safe_dump(study.raw, sort_keys=False))
        yield sweep_dir


def _refuse_changed_claims(sweep_dir: Path, claims: object) -> None:
    """Claims are fixed before the runs: a resumed sweep may not change them, since claims chosen after
    seeing results would make the multiplicity correction and the verdicts meaningless (a new question
    for finished runs belongs in a new study file, where it is visibly declared after the fact).  They are
    compared with the record made at the sweep's start (a sweep from before it: with its study.yaml)."""
    recorded, before = declared_claims(sweep_dir)
    study_file = sweep_dir / (DECLARED_FILE if recorded else STUDY_FILE)
    if not recorded:
        before = (yaml.safe_load(study_file.read_text(encoding="utf-8")) or {}).get("claims") if study_file.is_file() \
            else None  # fmt: skip
    if before != claims:
        raise ConfigError(
            f"--resume: the claims: of this study differ from those in {study_file}, declared before its runs; "
            "claims cannot change once a sweep has started (resume with the study file as it was, or start a "
            "new sweep)."
        )


def plan_jobs(
    study: Study,
    sweep_dir: Path,
    keep_checkpoints: bool = False,
    runs: Sequence[RunSpec | TuningRun | NoiseRun] | None = None,
) -> tuple[list[Job], int]:
    """The runs still to do (``runs``, default the study's evaluation runs) and how many are finished.  A
    partial run directory is deleted, unless ``keep_checkpoints`` and it holds a checkpoint of the same
    settings: then the run resumes."""
    jobs, skipped = [], 0
    for spec in study.runs if runs is None else runs:
        run_dir = sweep_dir / spec.rel_dir
        scenario = resolved_dump(spec.scenario)
        if is_finished(run_dir):
            _check_same(run_dir, scenario)
            skipped += 1
            continue
        if keep_checkpoints and (run_dir / CHECKPOINT).is_file():
            _check_same(run_dir, scenario)
            jobs.append(Job(spec.variant, spec.seed, scenario, run_dir, resume=True))
            continue
        if run_dir.exists():
            shutil.rmtree(run_dir)
        jobs.append(Job(spec.variant, spec.seed, scenario, run_dir, env=getattr(spec, "env", ())))
    return jobs, skipped


def _check_same(run_dir: Path, scenario: dict) -> None:
    path = run_dir / "config.yaml"
    done = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {}
    differ = sorted(_differences(done, scenario))
    if differ:
        raise ConfigError(
            f"--resume: the finished run {run_dir} was made with other settings ({', '.join(differ[:5])}); "
            "delete that run directory or start a new sweep."
        )


def _differences(a: object, b: object, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ; keys present on one side only are ignored (a newer schema may
    add keys with defaults)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in a.keys() & b.keys():
            out += _differences(a[key], b[key], f"{prefix}{key}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]
