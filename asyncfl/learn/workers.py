"""One run's training spread over Ray actors: ``trainer.workers`` (docs/how-to/workers.md).

The timing world and the server stay in the driver process; only the learning world's jobs travel.  Each
worker is a long-lived Ray actor that builds the run's data set and its own trainer once (the ``build``
callable it is given) and then trains the calls it is sent.  A job's inputs (its base version, client,
attempt and step count) are fixed when its task starts, so :class:`~asyncfl.learn.jobs.JobBook` hands each
group of jobs queued at one aggregation to :meth:`WorkerPool.send` at once: the workers train while the
driver goes on (the rest of the round's bookkeeping, and under K-async the next aggregations), and a result is
waited for only when the server aggregates it.

**Results do not depend on the number of workers.**  A batched trainer's result for a job depends, in its
last bits, on the jobs it is batched with (torch's kernels block the work by batch shape: 1.5e-8 on a job's
delta between a cohort of 8 and the same job alone, LeNet-5 and MLP on the CPU).  So a group is cut into
calls by :func:`calls_of` -- the fewest calls of at most ``jobs_per_call`` jobs, of near-equal sizes -- from
the group alone, never from the worker count; any worker computes a call to the same bits, so which one
takes it changes nothing.  With the sequential executor a job's result depends on nothing but the job, and
a run with workers writes the same files as one without.

Base parameter vectors are put into Ray's object store once per version (as NumPy arrays, which a worker reads
without unpickling a copy), kept by each worker until the job book drops the version, and deltas come back one
per job, as NumPy arrays too: Ray pickles a torch tensor's bytes, which cost a ResNet-18 delta 0.13 s against
0.06 s as NumPy.  Partial sums (a worker adding its jobs' weighted deltas before sending them) would save
transfers only for weighted-sum strategies; ``benchmarks/performance/bench_workers.py`` prints a delta's
transfer beside a job's training, and every delta comes back as it is.

A worker that dies ends the run with :class:`WorkerLost` (the run ends ``failed`` and resumes from its last
checkpoint like any failed run).  Ray is imported only when a pool starts: it is an optional dependency.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from asyncfl.errors import ConfigError
from asyncfl.learn.trainer import TrainingJob, TrainingResult, calls_of
from asyncfl.learn.training import RAY_MISSING

BATCHED_JOBS_PER_CALL = 8  # jobs_per_call's default for batched executors (docs/how-to/workers.md)


class WorkerLost(RuntimeError):
    """A training worker died (its process, node or Ray itself): the run ends ``failed``."""


class TrainingWorker:
    """The body of one Ray actor: builds the run's trainer once, then trains the calls sent to it."""

    def __init__(self, build: Callable[[], Any], threads: int) -> None:
        torch.set_num_threads(threads)  # Ray reserves the actor this many CPUs (WorkerPool.start)
        self.trainer, self.device = build()
        self.bases: dict[int, torch.Tensor] = {}  # base version -> parameters on this worker's device

    def ready(self) -> None:
        """Answered once the worker has built its trainer (Ray runs ``__init__`` first)."""

    def train(self, jobs: Sequence[TrainingJob], live: Sequence[int], versions: Sequence[int], *bases) -> list:
        """Train ``jobs`` from their base versions; ``versions[i]``'s parameters are ``bases[i]`` (NumPy, read
        from Ray's store without a copy), kept while the driver's job book keeps the version (``live``).  The
        deltas go back as NumPy arrays, which Ray hands over without pickling."""
        for version in [v for v in self.bases if v not in live]:
            del self.bases[version]
        for version, base in zip(versions, bases):
            if version not in self.bases:
                self.bases[version] = torch.from_numpy(base.copy()).to(self.device)  # Ray's copy is read-only
        results = self.trainer.run([self.bases[job.base_version] for job in jobs], list(jobs))
        return [(r.delta.cpu().numpy(), r.train_loss, r.num_steps, r.train_loss_sq) for r in results]


@dataclass(frozen=True)
class WorkerSettings:
    """What :class:`WorkerPool` needs from ``trainer``: the resolved values of its worker keys."""

    count: int
    address: str | None
    jobs_per_call: int
    gpus_per_worker: float
    threads: int


@dataclass
class Call:
    """One worker call in flight: the keys of its jobs, in order, and Ray's handle on its result."""

    keys: list[tuple[int, int]]
    handle: Any
    worker: int


class WorkerPool:
    """The driver's side of ``trainer.workers``: starts the actors, sends calls, gathers their results.

    A job book talks to it through :meth:`send` (a group of jobs, each with its base) and :meth:`results`
    (one call's results, waited for); ``remote = True`` tells :class:`~asyncfl.learn.jobs.JobBook` so."""

    remote = True
    batched = False

    def __init__(self, build: Callable[[], Any], settings: WorkerSettings, device: torch.device) -> None:
        self.settings, self.device = settings, device
        cpus, gpus = settings.count * settings.threads, settings.count * settings.gpus_per_worker
        self.ray, self.started_ray = start_ray(settings.address, cpus)
        try:
            check_resources(self.ray, cpus, gpus)
        except ConfigError:
            if self.started_ray:
                self.ray.shutdown()
            raise
        actor = self.ray.remote(TrainingWorker).options(
            num_cpus=settings.threads, num_gpus=settings.gpus_per_worker, max_restarts=0, scheduling_strategy="SPREAD"
        )  # SPREAD: one worker per node first, as a user with a GPU per node expects
        self.workers = [actor.remote(build, settings.threads) for _ in range(settings.count)]
        self._wait_until_built()
        self.next_worker = 0  # calls go round the workers in turn: which one trains a call changes no result
        self.base_refs: dict[int, Any] = {}  # base version -> object in Ray's store

    def _wait_until_built(self) -> None:
        """Wait for every worker to build its data set and trainer, so that the run starts with them ready (and a
        worker that cannot build, say without the data set's files on its node, stops it before it starts)."""
        count = len(self.workers)
        for number, worker in enumerate(self.workers, start=1):
            try:
                self.ray.get(worker.ready.remote())
            except self.ray.exceptions.RayError as error:
                self.close()
                # Ray's message ends with the worker's own exception, "Type: message", under its traceback
                cause = str(error).strip().splitlines()[-1].strip() if str(error).strip() else type(error).__name__
                raise WorkerLost(
                    f"trainer.workers: training worker {number} of {count} could not start ({cause})"
                ) from None

    def send(self, bases: dict[int, torch.Tensor], jobs: Sequence[TrainingJob]) -> list[Call]:
        """Send a group of jobs (queued together) as :func:`calls_of` cuts it, the calls to the workers in
        turn; ``bases``: every base version a job may need."""
        self._forget_bases(bases)
        calls = []
        for positions in calls_of(len(jobs), self.settings.jobs_per_call):
            part = [jobs[i] for i in positions]
            versions = sorted({job.base_version for job in part})
            refs = [self._base_ref(v, bases[v]) for v in versions]
            worker, self.next_worker = self.next_worker, (self.next_worker + 1) % len(self.workers)
            handle = self.workers[worker].train.remote(part, sorted(bases), versions, *refs)
            calls.append(Call([(job.client, job.attempt) for job in part], handle, worker))
        return calls

    def results(self, call: Call) -> list[TrainingResult]:
        """A call's results, in its jobs' order, on the run's device (waits for them)."""
        try:
            rows = self.ray.get(call.handle)
        except self.ray.exceptions.RayError as error:
            raise WorkerLost(
                f"trainer.workers: training worker {call.worker + 1} of {len(self.workers)} was lost "
                f"({type(error).__name__}: {_first_line(error)}); the run resumes from its last checkpoint "
                "(python -m asyncfl run --resume RUN_DIR)"
            ) from None
        return [
            TrainingResult(torch.tensor(delta, device=self.device), loss, steps, sq) for delta, loss, steps, sq in rows
        ]

    def run(self, bases: Sequence[torch.Tensor], jobs: Sequence[TrainingJob]) -> list[TrainingResult]:
        """Train ``jobs`` now, as one group (the trainer interface; a job book with a pool uses send/results)."""
        versions = {job.base_version: base for job, base in zip(jobs, bases)}
        return [result for call in self.send(versions, jobs) for result in self.results(call)]

    def close(self) -> None:
        """Stop the actors, and Ray if this pool started it."""
        for worker in self.workers:
            self.ray.kill(worker)
        self.workers = []
        if self.started_ray:
            self.ray.shutdown()

    def _base_ref(self, version: int, base: torch.Tensor) -> Any:
        if version not in self.base_refs:
            self.base_refs[version] = self.ray.put(base.detach().cpu().numpy())  # NumPy: read without a copy
        return self.base_refs[version]

    def _forget_bases(self, live: dict[int, torch.Tensor]) -> None:
        for version in [v for v in self.base_refs if v not in live]:
            del self.base_refs[version]  # Ray frees it once no call in flight holds it


def start_ray(address: str | None, cpus: int) -> tuple[Any, bool]:
    """Ray, joined to ``address`` (or to the instance this process runs, or a new local one offering at least
    ``cpus`` CPUs: the workers' threads may outnumber the cores), and whether this call started it (then the
    pool shuts it down at the end; otherwise it leaves it running)."""
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_MISSING) from None
    if ray.is_initialized():
        return ray, False
    # "local": a new instance here even where a cluster runs on this machine (null would join that one)
    local = {"num_cpus": max(cpus, os.cpu_count() or 1)} if address is None else {}
    try:
        probe(address)
        ray.init(
            address=address or "local", include_dashboard=False, log_to_driver=False, configure_logging=False, **local
        )
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ConfigError(
            f"trainer.ray_address: {address!r}: no Ray cluster could be joined ({_first_line(error)}); "
            "allowed: 'auto' (the cluster started on this machine with ray start --head), 'HOST:PORT', "
            "'ray://HOST:PORT', or null to start Ray here."
        ) from None
    return ray, True


def probe(address: str | None) -> None:
    """Fail in seconds on a HOST:PORT nothing listens at: Ray itself retries for minutes before giving up."""
    if address is None or ":" not in address:  # None, "auto", "local": Ray answers at once
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except ValueError:
        raise ValueError(f"{port!r} is not a port number") from None
    except OSError as error:
        raise ConnectionError(f"nothing answers at {host}:{port} ({error})") from None


PROBE_TIMEOUT_S = 5.0


def check_resources(ray: Any, cpus: float, gpus: float) -> None:
    """Refuse a pool the cluster cannot place (its actors would wait for resources forever)."""
    offered = ray.cluster_resources()
    have_cpus, have_gpus = offered.get("CPU", 0), offered.get("GPU", 0)
    if cpus > have_cpus or gpus > have_gpus:
        raise ConfigError(
            f"trainer.workers: the workers need {cpus:g} CPUs (trainer.threads or 1 each) and {gpus:g} GPUs "
            f"(trainer.gpus_per_worker each), but the Ray cluster offers {have_cpus:g} CPUs and {have_gpus:g} GPUs; "
            "allowed: fewer workers or threads, a fraction in gpus_per_worker, or a larger cluster."
        )


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
