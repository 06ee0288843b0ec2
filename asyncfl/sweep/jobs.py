"""One run of a sweep (or of ``advise``'s grid): what it is (:class:`Job`), how it runs (:func:`run_job`,
the one place that calls the run loop) and the local executor (:func:`run_locally`).  The Ray executor
(:mod:`asyncfl.sweep.ray_executor`) builds on this module; :mod:`asyncfl.sweep.study_sweep` chooses
between the two, so the imports go one way: study_sweep -> ray_executor -> jobs."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from asyncfl.config import validate_scenario
from asyncfl.output.reading import read_summary
from asyncfl.runner.start import resume_run, run_scenario


@dataclass(frozen=True)
class Job:
    variant: str
    seed: int
    scenario: dict  # the validated scenario as plain JSON data (what crosses to a Ray worker)
    run_dir: Path
    resume: bool = False  # continue the partial run in run_dir from its checkpoint
    env: tuple[tuple[str, str], ...] = ()  # run in a subprocess with these set (noise_floor:'s ATEN_CPU_CAPABILITY)


def run_job(scenario: dict, run_dir: Path, resume: bool = False) -> dict:
    """One run from plain scenario data (or its checkpoint) to a finished run directory (with its
    figures when ``output.plot``: the run draws them)."""
    if resume and scenario.get("flower"):  # a K-async Flower run's checkpoint (a ServerApp's run writes none)
        from asyncfl.flower.resume import resume_flower  # flwr, an optional extra: imported where it is used

        resume_flower(run_dir)
    elif resume:
        resume_run(run_dir, quiet=True)
    elif scenario.get("flower"):
        # a Flower app pair runs through its front door; flwr, an optional extra, is imported at this one use
        from asyncfl.flower import run as run_flower

        run_flower(None, None, validate_scenario(scenario, source=str(run_dir)), run_dir)
    else:
        run_scenario(validate_scenario(scenario, source=str(run_dir)), run_dir, quiet=True)
    return read_summary(run_dir, required=False)


def run_locally(jobs: list[Job], log: Callable[[str], None]) -> list[tuple[Job, str]]:
    """Run ``jobs`` one after the other; a run that fails is reported and the next one runs, Ctrl-C stops
    the sweep (also one that a finalizer swallowed: see :func:`interrupts_in_finalizers`)."""
    failures = []
    with interrupts_in_finalizers() as swallowed, _unfrozen_after():
        for i, job in enumerate(jobs, start=1):
            summary = None
            try:
                summary = run_in_subprocess(job) if job.env else run_job(job.scenario, job.run_dir, job.resume)
            except Exception as exc:  # one broken run must not lose the others
                failures.append((job, f"{type(exc).__name__}: {exc}"))
                log(f"[{i}/{len(jobs)}] {job.variant} seed{job.seed}: FAILED: {exc}")
            finally:
                # A run leaves ~30 MB of objects in reference cycles that the automatic collector rarely reaches
                # between runs: 110 runs in one process grew to 3.7 GB.  Collecting here keeps the sweep flat.
                # What survives is frozen, so that the next collection walks only what the next run made
                # (a full walk of a process holding torch, pandas and matplotlib takes ~0.1-0.2 s); a run's
                # own LoopGuards unfreeze everything when they exit, and so does the end of the sweep.
                gc.collect()
                gc.freeze()
            if swallowed:
                raise KeyboardInterrupt
            if summary is not None:
                log(f"[{i}/{len(jobs)}] {describe(job, summary)}")
    return failures


SUBPROCESS_MAIN = "from asyncfl.sweep.jobs import job_from_stdin; job_from_stdin()"


def run_in_subprocess(job: Job) -> dict:
    """:func:`run_job` in a fresh Python process whose environment adds ``job.env``: torch reads
    ATEN_CPU_CAPABILITY once, at import, so a kernel set can only be chosen for a new process."""
    request = json.dumps({"scenario": job.scenario, "run_dir": str(job.run_dir)})
    done = subprocess.run([sys.executable, "-c", SUBPROCESS_MAIN], input=request, text=True,
                          capture_output=True, env={**os.environ, **dict(job.env)}, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the run's process exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return read_summary(job.run_dir, required=False)


@contextmanager
def _unfrozen_after() -> Iterator[None]:
    """Everything :func:`run_locally` froze is returned to the collector when the sweep ends (or stops)."""
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def interrupts_in_finalizers() -> Iterator[list[BaseException]]:
    """Collect the Ctrl-C that Python prints as "Exception ignored" and drops: one that lands while a
    finalizer runs (a ``__del__``, e.g. tqdm's, which the collector above calls for a finished run's
    objects) cannot propagate, so the sweep went on and exited 0.  The list it yields holds them; the
    sweep raises KeyboardInterrupt once the run at hand is written.  Other unraisable exceptions are
    reported as Python would."""
    swallowed: list[BaseException] = []
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            swallowed.append(unraisable.exc_value)
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield swallowed
    finally:
        sys.unraisablehook = previous


def describe(job: Job, summary: dict) -> str:
    acc = summary.get("final_accuracy")
    acc_text = f"{acc:.3f}" if isinstance(acc, (int, float)) else "n/a"
    return (
        f"{job.variant} seed{job.seed}: {summary.get('status')}, final accuracy {acc_text}, "
        f"{summary.get('virtual_time_s', 0):,.0f} virtual s, {summary.get('real_seconds', 0):.1f} s real"
    )


def job_from_stdin() -> None:
    """The subprocess of :func:`run_in_subprocess`: ``{"scenario": ..., "run_dir": ...}`` on stdin."""
    request = json.load(sys.stdin)
    run_job(request["scenario"], Path(request["run_dir"]))
