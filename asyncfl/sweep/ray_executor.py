"""Run sweep jobs as Ray tasks (``--executor ray [--address ADDR]``).

Each variant x seed is one task with ``num_cpus = cpus_per_task`` and ``num_gpus = gpus_per_task``
(a run's ``device: auto`` then picks the GPU Ray assigned).  A task runs into a scratch directory
on its worker and returns the run directory's files; the driver writes them into
``<sweep>/<variant>/seed<N>/``, so workers need no shared file system and the layout is the one the
local executor writes.  A directory appears only once its run is complete (written under a
temporary name, then renamed).  Workers must have asyncfl installed (or ship it with a Ray
``runtime_env``); without ``--address`` a local Ray instance is started and stopped.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable

from asyncfl.errors import ConfigError
from asyncfl.sweep.jobs import Job, describe, run_job


def run_in_scratch(scenario: dict) -> tuple[dict, dict[str, bytes]]:
    """The body of a Ray task: one run in a temporary directory, returned as {relative path: bytes}."""
    with tempfile.TemporaryDirectory(prefix="asyncfl-") as tmp:
        run_dir = Path(tmp) / "run"
        summary = run_job(scenario, run_dir)
        files = {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    return summary, files


def write_files(run_dir: Path, files: dict[str, bytes]) -> None:
    staging = run_dir.with_name(f".{run_dir.name}.partial")
    if staging.exists():
        shutil.rmtree(staging)
    for rel, data in files.items():
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    staging.rename(run_dir)


def check_ray(gpus_per_task: float, cpus_per_task: float) -> None:
    """Can the sweep run on Ray?  Asked before the sweep directory is made, so a refusal leaves nothing."""
    if gpus_per_task < 0 or cpus_per_task <= 0:
        raise ConfigError("--gpus-per-task must be >= 0 and --cpus-per-task > 0.")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ConfigError(
            '--executor ray: Ray is not installed; install the extra with pip install -e ".[ray]" '
            "(from the asyncfl checkout, see docs/how-to/ray.md), or pip install ray."
        ) from None


def run_on_ray(
    jobs: list[Job], address: str | None, gpus_per_task: float, cpus_per_task: float, log: Callable[[str], None]
) -> list[tuple[Job, str]]:
    check_ray(gpus_per_task, cpus_per_task)
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(run_in_scratch).options(num_cpus=cpus_per_task, num_gpus=gpus_per_task)
        pending = {task.remote(job.scenario): job for job in jobs}
        failures: list[tuple[Job, str]] = []
        done = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(ready[0])
            done += 1
            try:
                summary, files = ray.get(ready[0])
            except Exception as exc:  # a failed task must not lose the others
                failures.append((job, f"{type(exc).__name__}: {exc}"))
                log(f"[{done}/{len(jobs)}] {job.variant} seed{job.seed}: FAILED: {exc}")
                continue
            write_files(job.run_dir, files)
            log(f"[{done}/{len(jobs)}] {describe(job, summary)}")
        return failures
    finally:
        if started:
            ray.shutdown()
