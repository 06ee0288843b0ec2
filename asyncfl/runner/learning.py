"""The learning side of a run: global model, strategy, lazy training jobs, evaluation.

This is the one place where the timing world (task plans, closed rounds) meets torch.  The run loop
(:mod:`asyncfl.runner.simulation`) hands it each closed round: the started tasks' jobs are queued, the round's
updates trained (or taken from the job book), aggregated, and what came of it returned as
:class:`~asyncfl.runner.record.Learned`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from asyncfl.algorithms import Context, Strategy, Update
from asyncfl.learn.compression import CompressedUploads
from asyncfl.learn.jobs import JobBook
from asyncfl.learn.trainer import TrainingJob, evaluate, hit_rate
from asyncfl.learn.training import Training
from asyncfl.runner.record import Learned, is_diverged
from asyncfl.sim.clients import TaskPlan
from asyncfl.sim.servers import ClosedRound


def all_finite(vector: torch.Tensor) -> bool:
    """No NaN or infinity in ``vector``: its least and greatest values are finite (NaN propagates through
    both).  One reduction and two numbers, several times quicker than ``isfinite(vector).all()``, which builds
    a mask as long as the model, at every aggregation."""
    least, greatest = torch.aminmax(vector)
    return math.isfinite(least.item()) and math.isfinite(greatest.item())


class LearningWorld(Protocol):
    """What the run loop (:class:`asyncfl.runner.simulation.Simulation`) asks of the learning side; :class:`Learner`
    provides it, and stands-ins take its place where nothing is trained: :class:`asyncfl.runner.timing_learning.
    TimingLearner` (``timing_only``) and :class:`asyncfl.runner.replay.ReplayLearner` (a resumed run up to its
    checkpoint)."""

    model_bytes: int  # bytes of one model transfer (the timing world's download and upload)
    participation: tuple[float, ...] | None  # p_i of the availability model, set by the runner
    strategy: Strategy | None
    jobs: JobBook

    def queue(self, plans: Sequence[TaskPlan]) -> None: ...
    def train(self, closed: ClosedRound, staleness: Sequence[int]) -> list: ...
    def apply(self, closed: ClosedRound, updates: list, record_weights: bool) -> Learned: ...
    def test_metrics(self) -> tuple[float, float, list[float]]: ...
    def final_arrays(self) -> dict[str, np.ndarray] | None: ...
    def client_accuracies(self) -> list[float]: ...
    def client_test_sizes(self) -> list[int]: ...
    def state(self) -> dict: ...
    def restore(self, state: dict) -> None: ...


class Learner:
    def __init__(
        self,
        model: nn.Module,
        federation,
        strategy: Strategy,
        trainer,
        training: Training,
        max_staleness: int | None = None,
        seed: int = 0,
    ) -> None:
        """``max_staleness``: the K-async server's, so that jobs it will drop are not kept (JobBook);
        ``seed``: the scenario's, for ``training.compression``'s draws."""
        self.model, self.federation = model, federation
        self.train_sizes = [len(split) for split in federation.client_train]  # each update's num_samples
        params = parameters_to_vector(model.parameters()).detach().clone()
        self._begin(params, federation.num_clients, strategy, trainer, training, max_staleness, seed)

    def _begin(
        self, params, num_clients: int, strategy: Strategy, trainer, training: Training, max_staleness, seed: int
    ) -> None:
        """The federated state that :meth:`apply`, :meth:`state` and :meth:`restore` work on, from the initial
        global ``params`` (a learning side whose training happens elsewhere, such as a Flower ClientApp's,
        starts here with its own ``trainer`` for the job book)."""
        self.strategy, self.training = strategy, training
        self.num_clients = num_clients
        self.params, self.version = params, 0
        self.jobs = JobBook(trainer, max_staleness)
        self.jobs.publish(0, self.params)
        self.seen: set[int] = set()
        self.participation: tuple[float, ...] | None = None  # p_i of the availability model (set by the runner)
        self.uploads = CompressedUploads(training.compression, seed)
        self.pending_residuals: dict = {}  # error feedback of the updates collected, kept when applied

    @property
    def model_bytes(self) -> int:
        return self.params.numel() * self.params.element_size()

    def queue(self, plans: Sequence[TaskPlan]) -> None:
        """Queue the training jobs of tasks that will deliver (computed here only when an update needs one; sent
        at once to ``trainer.workers``)."""
        default = self.training.local_steps
        for plan in plans:
            steps = default if plan.steps is None else plan.steps  # None: a plan made by hand
            self.jobs.submit(TrainingJob(plan.client, plan.base_version, plan.attempt, steps))
        self.jobs.dispatch()  # a remote trainer (trainer.workers) starts on them now

    def train(self, closed: ClosedRound, staleness: Sequence[int]) -> list[Update]:
        """Train (or take from the job book) every update the round received, ``staleness`` being each one's
        (:func:`asyncfl.runner.record.staleness_of`).  This is where the time goes; it changes no federated
        state, so an interrupt here leaves the last round intact."""
        self.pending_residuals = {}
        return [self._update(plan, tau) for plan, tau in zip(closed.received, staleness)]

    def apply(self, closed: ClosedRound, updates: list[Update], record_weights: bool) -> Learned:
        """Aggregate the trained updates into a new global version (strategy memory included)."""
        self.seen.update(u.client for u in updates)
        self.uploads.commit(self.pending_residuals)
        context = Context(
            version=closed.round - 1,
            time=closed.time,
            num_clients=self.num_clients,
            selected=frozenset(closed.selected),
            failed=frozenset(closed.failed_clients),
            seen=frozenset(self.seen),
            participation=self.participation,
        )
        result = self.strategy.aggregate(self.params, updates, context)
        self.params = result.params.detach()
        self.version += 1
        self.jobs.publish(self.version, self.params)
        losses = tuple(u.train_loss for u in updates)
        rows = ()
        if record_weights:
            rows = tuple(
                {"round": self.version, "client": c, "weight": w, **result.notes.get(c, {})}
                for c, w in sorted(result.weights.items())
            )
        diverged = is_diverged(all_finite(self.params), losses)
        return Learned(losses, tuple(u.train_loss_sq for u in updates), rows, diverged)

    def _update(self, plan: TaskPlan, staleness: int) -> Update:
        result = self.jobs.result(plan.client, plan.attempt)
        delta = result.delta
        if self.uploads.active:  # what the client sends is what every algorithm aggregates
            delta = self.uploads.compress(plan.client, plan.attempt, delta, self.pending_residuals)
        return Update(
            client=plan.client,
            delta=delta,
            base_version=plan.base_version,
            staleness=staleness,
            num_samples=self.train_sizes[plan.client],
            num_steps=result.num_steps,
            lr=self.training.lr,
            train_loss=result.train_loss,
            train_loss_sq=result.train_loss_sq,
        )

    def state(self) -> dict:
        """What a checkpoint needs from the learning world (the model lives in ``params``)."""
        state = {
            "params": self.params,
            "version": self.version,
            "seen": sorted(self.seen),
            "strategy": self.strategy.state_dict(),
            "jobs": self.jobs.state(),
        }
        if self.uploads.active:
            state["compression"] = self.uploads.state()  # error-feedback residuals
        return state

    def restore(self, state: dict) -> None:
        self.params, self.version, self.seen = state["params"], state["version"], set(state["seen"])
        self.strategy.load_state_dict(state["strategy"])
        self.jobs.restore(state["jobs"])
        if "compression" in state:
            self.uploads.restore(state["compression"])

    def final_arrays(self) -> dict[str, np.ndarray]:
        """The global model by name (its ``state_dict``: final_model.npz, see :mod:`asyncfl.runner.callbacks.
        final_model`)."""
        vector_to_parameters(self.params, self.model.parameters())
        return {name: tensor.detach().cpu().numpy() for name, tensor in self.model.state_dict().items()}

    def test_metrics(self) -> tuple[float, float, list[float]]:
        """Global test accuracy, loss and accuracy per class (NaN for a class absent from the test set)."""
        fed = self.federation
        accuracy, loss, hits = evaluate(self.model, self.params, fed, fed.test_indices)
        labels = fed.labels[fed.test_indices]
        per_class = [hit_rate(hits[labels == c]) for c in range(fed.num_classes)]  # NaN: class not in the test set
        return accuracy, loss, per_class

    def client_accuracies(self) -> list[float]:
        """Accuracy of the global model on each client's local test split (NaN when it has none)."""
        fed = self.federation
        sizes = [len(t) for t in fed.client_test]
        if sum(sizes) == 0:
            return [math.nan] * fed.num_clients
        _, _, hits = evaluate(self.model, self.params, fed, torch.cat(list(fed.client_test)))
        out, start = [], 0
        for n in sizes:
            out.append(hit_rate(hits[start : start + n]))  # NaN: no local test split
            start += n
        return out

    def client_test_sizes(self) -> list[int]:
        """Samples in each client's local test split."""
        return [len(split) for split in self.federation.client_test]
