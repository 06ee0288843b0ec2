"""Lazy training jobs (docs/explanation/architecture.md section 2).

The timing world submits a job when a task that will deliver starts; the result is computed only
when the server aggregates it.  A trainer with ``batched = True`` then gets every outstanding job
not yet computed in one call, whatever base version each started from (a job's result depends
only on its inputs, and a batched trainer takes one base row per job); a sequential trainer gets
just the one asked for.  Base parameter vectors are kept only while some outstanding job still
needs them.

A trainer with ``remote = True`` (:class:`asyncfl.learn.workers.WorkerPool`, ``trainer.workers``) trains
elsewhere: :meth:`JobBook.dispatch` sends it the jobs submitted since its last call as soon as the run has
queued them, and a result is waited for when it is asked for.  A checkpoint first gathers every call in
flight, so that it holds results, never promises.

Every submitted job delivers in the timing world, so a computed result is used unless the K-async
server drops it for staleness (``server.max_staleness``) or the run stops while it is in flight.
A job whose base is more than ``max_staleness`` versions behind can only be dropped (the K-async
server aggregates every accepted update at the next aggregation, and versions only grow), so the
book forgets it, with its result and, once unused, its base vector, when that version is published.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import astuple

import torch

from asyncfl.learn.trainer import TrainingJob, TrainingResult


class JobBook:
    def __init__(self, trainer, max_staleness: int | None = None) -> None:
        """``max_staleness``: the K-async server's (None: no job is ever dropped as stale)."""
        self.trainer, self.max_staleness = trainer, max_staleness
        self.bases: dict[int, torch.Tensor] = {}
        self.current_version = -1
        self.pending: dict[tuple[int, int], TrainingJob] = {}  # (client, attempt) -> job
        self.done: dict[tuple[int, int], TrainingResult] = {}
        self.users: Counter = Counter()  # base version -> outstanding jobs
        self.computed = 0
        self.unsent: list[tuple[int, int]] = []  # submitted, not yet sent to a remote trainer
        self.in_flight: dict[tuple[int, int], object] = {}  # job -> the remote trainer's call that trains it

    def state(self) -> dict:
        """Everything but the trainer, as plain values (checkpoints load with ``weights_only``): the
        outstanding jobs, their base vectors and the results already computed (every call in flight gathered)."""
        for call in {id(call): call for call in self.in_flight.values()}.values():
            self._gather(call)
        return {
            "bases": dict(self.bases),
            "current_version": self.current_version,
            "pending": {key: astuple(job) for key, job in self.pending.items()},
            "done": {key: (r.delta, r.train_loss, r.num_steps, r.train_loss_sq) for key, r in self.done.items()},
            "users": dict(self.users),
            "computed": self.computed,
        }

    def restore(self, state: dict) -> None:
        self.bases, self.current_version = dict(state["bases"]), state["current_version"]
        self.pending = {key: TrainingJob(*job) for key, job in state["pending"].items()}
        # a checkpoint written before train_loss_sq existed holds 3-tuples: the field stays NaN
        self.done = {key: TrainingResult(*result) for key, result in state["done"].items()}
        self.users, self.computed = Counter(state["users"]), state["computed"]
        self.unsent, self.in_flight = [], {}

    def publish(self, version: int, params: torch.Tensor) -> None:
        """A new global model exists; older bases are dropped once no job needs them."""
        self.bases[version] = params
        self.current_version = version
        if self.max_staleness is not None:
            for key in [k for k, job in self.pending.items() if version - job.base_version > self.max_staleness]:
                self._take(key)
        for old in [v for v in self.bases if v != version and self.users[v] == 0]:
            del self.bases[old]

    def submit(self, job: TrainingJob) -> None:
        if job.base_version not in self.bases:
            raise KeyError(f"no published model version {job.base_version}")
        self.pending[(job.client, job.attempt)] = job
        self.users[job.base_version] += 1
        if getattr(self.trainer, "remote", False):
            self.unsent.append((job.client, job.attempt))

    def dispatch(self) -> None:
        """Send the jobs submitted since the last call to a remote trainer, as one group (a no-op for a trainer
        in this process, which trains when a result is asked for)."""
        group = [self.pending[key] for key in self.unsent if key in self.pending]
        self.unsent = []
        if group:
            for call in self.trainer.send(self.bases, group):
                self.in_flight.update(dict.fromkeys(call.keys, call))

    def submit_done(self, job: TrainingJob, result: TrainingResult) -> None:
        """Submit a job whose result is known already: a trainer outside asyncfl ran it when its task started
        (a Flower ClientApp, :mod:`asyncfl.flower.k_async`)."""
        self.submit(job)
        self.done[(job.client, job.attempt)] = result
        self.computed += 1

    def result(self, client: int, attempt: int) -> TrainingResult:
        key = (client, attempt)
        if key in self.in_flight:
            self._gather(self.in_flight[key])
        if key not in self.done:
            if self.trainer.batched:
                batch = [job for k, job in self.pending.items() if k not in self.done]
            else:
                batch = [self.pending[key]]
            bases = [self.bases[job.base_version] for job in batch]
            for job, result in zip(batch, self.trainer.run(bases, batch)):
                self.done[(job.client, job.attempt)] = result
            self.computed += len(batch)
        return self._take(key)

    def close(self) -> None:
        """Release what the trainer holds (a remote trainer's workers)."""
        if hasattr(self.trainer, "close"):
            self.trainer.close()

    def _gather(self, call) -> None:
        """Wait for a remote call; keep the results of its jobs still outstanding."""
        for key, result in zip(call.keys, self.trainer.results(call)):
            del self.in_flight[key]
            if key in self.pending:
                self.done[key] = result
                self.computed += 1

    def _take(self, key: tuple[int, int]) -> TrainingResult | None:
        """Remove a job (and its result, if computed) from the book."""
        job = self.pending.pop(key)
        self.users[job.base_version] -= 1
        if self.users[job.base_version] == 0 and job.base_version != self.current_version:
            self.bases.pop(job.base_version, None)
        return self.done.pop(key, None)
