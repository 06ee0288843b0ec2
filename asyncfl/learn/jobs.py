"""Lazy training jobs (DESIGN.md section 2).

The timing world submits a job when a task that will deliver starts; the result is computed only
when the server aggregates it.  A trainer with ``batched = True`` then gets every outstanding job
with the same base version in one call; a sequential trainer gets just the one asked for.  Base
parameter vectors are kept only while some outstanding job still needs them.
"""

from __future__ import annotations

from collections import Counter

import torch

from asyncfl.learn.trainer import TrainingJob, TrainingResult


class JobBook:
    def __init__(self, trainer) -> None:
        self.trainer = trainer
        self.bases: dict[int, torch.Tensor] = {}
        self.current_version = -1
        self.pending: dict[tuple[int, int], TrainingJob] = {}  # (client, attempt) -> job
        self.done: dict[tuple[int, int], TrainingResult] = {}
        self.users: Counter = Counter()  # base version -> outstanding jobs
        self.computed = 0

    STATE = ("bases", "current_version", "pending", "done", "users", "computed")

    def state(self) -> dict:
        """Everything but the trainer: outstanding jobs, their base vectors and computed results."""
        return {name: getattr(self, name) for name in self.STATE}

    def restore(self, state: dict) -> None:
        for name in self.STATE:
            setattr(self, name, state[name])

    def publish(self, version: int, params: torch.Tensor) -> None:
        """A new global model exists; older bases are dropped once no job needs them."""
        self.bases[version] = params
        self.current_version = version
        for old in [v for v in self.bases if v != version and self.users[v] == 0]:
            del self.bases[old]

    def submit(self, job: TrainingJob) -> None:
        if job.base_version not in self.bases:
            raise KeyError(f"no published model version {job.base_version}")
        self.pending[(job.client, job.attempt)] = job
        self.users[job.base_version] += 1

    def result(self, client: int, attempt: int) -> TrainingResult:
        key = (client, attempt)
        if key not in self.done:
            job = self.pending[key]
            if self.trainer.batched:
                batch = [j for j in self.pending.values() if j.base_version == job.base_version and
                         (j.client, j.attempt) not in self.done]  # fmt: skip
            else:
                batch = [job]
            for j, result in zip(batch, self.trainer.run(self.bases[job.base_version], batch)):
                self.done[(j.client, j.attempt)] = result
            self.computed += len(batch)
        return self._take(key)

    def _take(self, key: tuple[int, int]) -> TrainingResult:
        job = self.pending.pop(key)
        self.users[job.base_version] -= 1
        if self.users[job.base_version] == 0 and job.base_version != self.current_version:
            self.bases.pop(job.base_version, None)
        return self.done.pop(key)
