"""K-async FedBuff, FedAsync and FedHist with a Flower ClientApp as the local trainer (issue 31, item 3).

Everything but the local training is asyncfl's: the K-async server (``asyncfl/sim/servers/k_async.py``) keeps
``server.concurrency`` clients busy and closes a version every ``server.k`` arrivals; the strategy
(``asyncfl/algorithms/``) aggregates with its own staleness weights; the run loop writes every run file.  Each
task's training is one train message to the client's Flower node (:class:`~asyncfl.flower.nodes.FlowerNodes`)
and its reply's arrays are the update: Δ = w_local − w_base (architecture.md section 5's sign), w_base being the
arrays the message carried.

**When the ClientApp runs: when its task starts, in virtual time.**  A native task is planned whole when it
starts (``asyncfl/sim/clients.py``); its compute time follows from its local steps, known in advance.  A Flower
task's work is known only from its reply (the compute-work contract of :mod:`asyncfl.flower.nodes`: examples x
local epochs), so the ClientApp is called at the moment the task starts, once the client is known to be online
with battery to spare (``Work.perform``, :class:`~asyncfl.sim.clients.DoneWork`), with the global model of that
moment, which is the version the task starts from.  Its reply then times the task as a native one: download =
the message's bytes, compute = samples processed / the client's speed x the native jitter, upload = the
reply's bytes; availability and battery play the plan out unchanged.  A client that goes offline or empties its
battery before its upload completes fails with the native reason and its reply is thrown away (its node did
train: its Context keeps what the call changed, as a device that trained and then lost its link).  Same seed,
same calls in the same order: when tasks start is SimPy's deterministic order, and the ClientApp is told the
same things each time.  Two alternatives were weighed: calling the ClientApp lazily when its update is
aggregated (as native jobs are) cannot time the task, and requiring the work in advance (``work.examples``
from the partition sizes) would make asyncfl know what only the ClientApp knows (its data, its epochs).  The
cost: a task that fails midway was trained for nothing, as on a real device.

A ClientApp that raises (Flower's error reply) or replies with arrays that are not the model's fails its task
as ``client_app`` when its (error) reply arrives, the message in events.jsonl's ``reason``; the run goes on, unless
no train reply has been usable yet when the ClientApps of 5 different clients (or all, in a smaller population)
have failed: then the run ends with a :class:`~asyncfl.errors.ConfigError` quoting the first failure
(:class:`~asyncfl.flower.nodes.ClientAppFailures`), rather than fail forever.

**The initial model** comes from ``flower.initial_arrays`` ("package.module:function" returning an
``ArrayRecord``, a torch ``state_dict`` or a list of numpy arrays): in K-async mode no ServerApp runs, and the
ClientApp has no standard way to hand out a model, so the function a Flower app uses for its ServerApp's
``initial_arrays`` is named directly.

**The train message** carries the arrays under "arrays" and a ConfigRecord "config" with "server-round" (the
version the update will help make: base version + 1, counting from 1 as Flower's rounds do) and "lr", the local
learning rate: ``flower.run_config``'s ``lr``, else ``training.lr``.  That rate is also the update's own
(FedHist divides Δ by it: its local gradients are −Δ/η).  Each update's ``num_samples`` is its reply's
examples (``flower.work.examples``) and its training loss the reply metric ``train_loss`` (NaN without one).

**Evaluation** (metrics.csv, every ``eval.every_rounds`` versions, and clients.csv's accuracy at the end): an
evaluate message with the global arrays to every node, untimed (as native test evaluation is); accuracy and
loss are the examples-weighted means of the ``flower.metrics`` keys over the replies
(:func:`asyncfl.flower.evaluation.weighted_metrics`, the rule a synchronous Flower run's evaluation uses).

Refused for a K-async Flower run (:func:`asyncfl.config.flower.check_k_async_flower`): a ``flower.server_app``,
``eval.per_class`` (no asyncfl test set), ``training.compression`` (the reply is the upload), ``timing_only``.

**Checkpoints** (``checkpoint:``, as a native run's): the server state is asyncfl's (:meth:`ClientAppLearner.state`:
the Learner's, with the job book's Flower results), and each node's ``Context.state`` is a ``RecordDict``, Flower's
own serialisable records; :mod:`asyncfl.flower.saved_state` says what else is saved (every task's work, the global
generators).  A resumed run (:func:`asyncfl.flower.resume.resume_flower`) replays the clock world up to the
checkpoint without calling the ClientApp for the tasks that started before it (:meth:`ClientAppLearner.perform`),
restores the Contexts at the checkpoint's aggregation, then goes on live.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import DEFAULT_TTL, ArrayRecord, ConfigRecord, Message, MessageType, Metadata, RecordDict

from asyncfl.algorithms import Strategy, Update, make_strategy
from asyncfl.config.clock import start_datetime
from asyncfl.config.schema import Scenario
from asyncfl.errors import ConfigError
from asyncfl.flower.apps import load_function
from asyncfl.flower.evaluation import examples_of, metric, reply_metric, weighted_metrics
from asyncfl.flower.flat_arrays import ArraysMismatch, FlatArrays, as_array_record
from asyncfl.flower.generators import apps_seeded, flower_seeds
from asyncfl.flower.link_state import MessageTimes
from asyncfl.flower.node_config import node_configs
from asyncfl.flower.nodes import FlowerNodes, message_bytes, node_id
from asyncfl.flower.saved_state import (
    PerformedWork,
    contexts_state,
    generators_state,
    restore_contexts,
    restore_generators,
)
from asyncfl.learn.trainer import TrainingJob, TrainingResult
from asyncfl.learn.training import Training
from asyncfl.runner.callbacks.base import Callback, Checkpoint
from asyncfl.runner.learning import Learner, all_finite
from asyncfl.runner.parts import OutsideLearning
from asyncfl.runner.record import Learned, is_diverged
from asyncfl.runner.start import run_scenario
from asyncfl.sim.clients import DoneWork, TaskPlan
from asyncfl.sim.servers import ClosedRound

ARRAYS, CONFIG = "arrays", "config"  # the record keys Flower's strategies use (flwr.serverapp.strategy.FedAvg)
TRAIN_LOSS = "train_loss"  # the reply metric of Flower's PyTorch template
SERVER_NODE_ID = 0  # the sender of every message: the ServerApp's node id in Flower (none runs here)


@dataclass(frozen=True)
class ClientAppResult(TrainingResult):
    """A training result taken from a ClientApp's reply: the native fields, and the examples it reported."""

    num_examples: int = 0
    loss_reported: bool = True  # False: the reply had no train_loss (NaN then says nothing of divergence)


@dataclass(frozen=True)
class FlowerKeys:
    """What the messages say and which reply metrics are read (from the scenario's ``flower`` section)."""

    lr: float  # the train config's "lr" and the updates' local learning rate
    accuracy: str = "eval_acc"
    loss: str = "eval_loss"
    examples: str = "num-examples"


class ClientAppLearner(Learner):
    """The learning side of a K-async run whose local training is a Flower ClientApp (see the module docstring).
    Aggregation, checkpoint state and the job book are :class:`~asyncfl.runner.learning.Learner`'s; the jobs'
    results are the replies collected when their tasks started (:meth:`perform`), handed to the book as done
    (:meth:`queue`).  Nothing here holds a torch model or a data set: the ClientApp has them."""

    def __init__(
        self,
        nodes: FlowerNodes,
        arrays: FlatArrays,
        strategy: Strategy,
        training: Training,
        keys: FlowerKeys,
        initial: torch.Tensor,
        max_staleness: int | None = None,
        seed: int = 0,
        times: MessageTimes = MessageTimes(),
    ) -> None:
        """``times``: Flower's timestamps of the messages (virtual second s is ``clock.start_time`` + s)."""
        self.model, self.federation = None, None  # the ClientApp holds the model and the data
        # the job book's trainer is the nodes: no job is ever computed here (compression is refused: none)
        self._begin(initial, len(nodes), strategy, nodes, training, max_staleness, seed)
        self.nodes, self.arrays, self.keys, self.times = nodes, arrays, keys, times
        self.version_time = 0.0  # the virtual time the current global version was made (its evaluate messages')
        self.collected: dict[tuple[int, int], tuple[TaskPlan, ClientAppResult]] = {}  # (client, attempt) ->
        self._sent: tuple[int, ArrayRecord] | None = None  # (version, its arrays): serialised once per version
        self._evaluated: tuple[int, list[Message]] | None = None  # (version, every node's evaluate reply)
        self.losses_reported: list[bool] = []  # per update of the round being trained: did its reply say its loss
        self.performed = PerformedWork()  # every task's work (a checkpoint's: a resumed run replays it)
        self.replaying = PerformedWork()  # resuming: the work of the tasks started before the checkpoint

    @property
    def model_bytes(self) -> int:
        """The arrays' data bytes (a task's download is its message's bytes: ``DoneWork``)."""
        return self.arrays.nbytes

    # ---- training: the ClientApp runs when a task starts ----

    def perform(self, plan: TaskPlan) -> DoneWork:
        """Send the task's train message, keep the reply's update, and tell the timing world what the task
        carried and computed (``Work.perform``).  A resumed run's task that started before its checkpoint is told
        what it did then: its ClientApp is not called again."""
        replayed = self.replaying.replayed(plan)
        if replayed is not None:
            return replayed
        return self.performed.note(plan, self._perform(plan))

    def _perform(self, plan: TaskPlan) -> DoneWork:
        if plan.base_version != self.version:  # the loop aggregates at the moment the server closes a version
            raise RuntimeError(f"task of version {plan.base_version} started while the global model is {self.version}")
        config = ConfigRecord({"server-round": plan.base_version + 1, "lr": self.keys.lr})
        message = self.message(MessageType.TRAIN, plan.client, config, plan.start, f"train-{plan.attempt}")
        reply = self.nodes.call(plan.client, message)
        sent, received = message_bytes(message), message_bytes(reply)
        if reply.has_error():  # clients.csv's train_samples: the latest reply's examples (none here)
            self.nodes.failures.note(plan.client, reply.error.reason)  # a ClientApp failing everywhere ends the run
            return DoneWork(0, sent, received, reply.error.reason, train_samples=0)
        try:
            result = self.result(message, reply)
        except (ArraysMismatch, KeyError, TypeError, ValueError) as problem:
            reason = f"its reply cannot be aggregated: {problem}"
            self.nodes.failures.note(plan.client, reason)
            return DoneWork(0, sent, received, reason, train_samples=0)
        self.nodes.failures.note(plan.client, None)
        self.collected[(plan.client, plan.attempt)] = (plan, result)
        return DoneWork(self.nodes.samples_processed(message, reply), sent, received, train_samples=result.num_examples)

    def message(self, kind: str, client: int, config: ConfigRecord, now: float, name: str) -> Message:
        """A message of ``kind`` to ``client``'s node with the global arrays and ``config``, created at virtual time
        ``now`` (its ``created_at``: Flower's seconds since the epoch, as a sync run's, :class:`MessageTimes`); its
        id: ``<client>-<name>`` (Flower's SuperLink would give it one; nothing here routes by it)."""
        if self._sent is None or self._sent[0] != self.version:
            self._sent = (self.version, self.arrays.record(self.params))
        # a record of its own per message (the arrays are shared, immutable): a ClientApp may pop from it
        arrays = ArrayRecord(dict(self._sent[1].items()))
        metadata = Metadata(
            run_id=self.nodes.contexts[client].run_id,
            message_id=f"{client}-{name}",
            src_node_id=SERVER_NODE_ID,
            dst_node_id=node_id(client),
            reply_to_message_id="",
            group_id=str(config["server-round"]),
            created_at=self.times.created_at(now),
            ttl=DEFAULT_TTL,
            message_type=kind,
        )
        return Message(RecordDict({ARRAYS: arrays, CONFIG: config}), metadata=metadata)

    def result(self, message: Message, reply: Message) -> ClientAppResult:
        """The update a train reply carries: its arrays minus the message's (both as flat vectors)."""
        content = reply.content
        if ARRAYS not in content.array_records:
            raise KeyError(f"no ArrayRecord {ARRAYS!r}")
        local = self.arrays.flatten(content.array_records[ARRAYS])
        loss = metric(content, TRAIN_LOSS)
        examples = metric(content, self.keys.examples)
        return ClientAppResult(
            delta=local - self.params,
            train_loss=math.nan if loss is None else float(loss),
            num_steps=max(1, round(self.nodes.epochs(message))),  # a reply does not say its steps: its epochs
            num_examples=0 if examples is None else int(examples),
            loss_reported=loss is not None,
        )

    def queue(self, plans: Sequence[TaskPlan]) -> None:
        """Hand the book the replies of the tasks that will deliver; forget those of tasks that failed after
        their ClientApp ran (every plan collected before now is complete: the timing world plans a task whole)."""
        for plan in plans:
            _, result = self.collected.pop((plan.client, plan.attempt))
            self.jobs.submit_done(TrainingJob(plan.client, plan.base_version, plan.attempt, result.num_steps), result)
        for key in [key for key, (plan, _) in self.collected.items() if not plan.delivered]:
            del self.collected[key]

    def train(self, closed: ClosedRound, staleness: Sequence[int]) -> list[Update]:
        self.losses_reported: list[bool] = []
        return super().train(closed, staleness)

    def apply(self, closed: ClosedRound, updates: list[Update], record_weights: bool) -> Learned:
        """Learner's aggregation; a training loss a reply did not report (NaN) does not mark the model diverged."""
        learned = super().apply(closed, updates, record_weights)
        self.version_time = closed.time
        if all(self.losses_reported):
            return learned
        losses = [u.train_loss for u, reported in zip(updates, self.losses_reported) if reported]
        return replace(learned, diverged=is_diverged(all_finite(self.params), losses))

    def _update(self, plan: TaskPlan, staleness: int) -> Update:
        result = self.jobs.result(plan.client, plan.attempt)
        self.losses_reported.append(result.loss_reported)
        return Update(
            client=plan.client,
            delta=result.delta,
            base_version=plan.base_version,
            staleness=staleness,
            num_samples=result.num_examples,
            num_steps=result.num_steps,
            lr=self.keys.lr,
            train_loss=result.train_loss,
        )

    # ---- checkpoints: asyncfl's server state, the nodes' Contexts (asyncfl.flower.saved_state) ----

    def state(self) -> dict:
        """The Learner's state, with what a Flower run adds: each job book result's examples and whether its reply
        reported a loss, every task's work, the nodes' Contexts and failures, the global generators."""
        done = self.jobs.done.items()
        failures = self.nodes.failures
        flower = {
            "results": {key: (result.num_examples, result.loss_reported) for key, result in done},
            "performed": self.performed.state(),
            "contexts": contexts_state(self.nodes.contexts),
            "failures": {"usable": failures.usable, "failed": dict(failures.failed)},
            "generators": generators_state(),
            "version_time": self.version_time,
        }
        return {**super().state(), "flower": flower}

    def restore(self, state: dict) -> None:
        """At a resumed run's checkpoint: the state :meth:`state` saved, Contexts and generators included."""
        super().restore(state)
        flower = state["flower"]
        results = flower["results"]
        self.jobs.done = {  # the job book keeps TrainingResults: the fields a Flower result adds are put back
            key: ClientAppResult(r.delta, r.train_loss, r.num_steps, r.train_loss_sq, *results[key])
            for key, r in self.jobs.done.items()
        }
        self.performed = PerformedWork.from_state(flower["performed"])
        self.replaying = PerformedWork()
        restore_contexts(self.nodes.contexts, flower["contexts"])
        self.nodes.failures.usable = flower["failures"]["usable"]
        self.nodes.failures.failed = dict(flower["failures"]["failed"])
        restore_generators(flower["generators"])
        self.version_time = flower["version_time"]

    def replay(self, checkpoint: Checkpoint) -> None:
        """Resuming from ``checkpoint``: the tasks that started before it will be told the work they did."""
        self.replaying = PerformedWork.from_state(checkpoint["learner"]["flower"]["performed"])

    # ---- evaluation: untimed evaluate messages to every node ----

    def evaluate_all(self) -> list[Message]:
        """Every node's reply to an evaluate message with the current global arrays (one round per version), created
        when the version was made (the evaluation is untimed: it happens at that instant)."""
        if self._evaluated is None or self._evaluated[0] != self.version:
            config = ConfigRecord({"server-round": self.version})
            name = f"evaluate-{self.version}"
            replies = [
                self.nodes.call(client, self.message(MessageType.EVALUATE, client, config, self.version_time, name))
                for client in range(self.num_clients)
            ]
            self._evaluated = (self.version, replies)
        return self._evaluated[1]

    def test_metrics(self) -> tuple[float, float, list[float]]:
        """Accuracy and loss of the global arrays: the examples-weighted means over the nodes' evaluate replies
        (no per-class accuracies: ``eval.per_class`` is refused for Flower runs)."""
        keys = self.keys
        means = weighted_metrics(self.evaluate_all(), (keys.accuracy, keys.loss), keys.examples)
        return means[keys.accuracy], means[keys.loss], []

    def final_arrays(self) -> dict[str, np.ndarray]:
        """The server's global arrays by their ArrayRecord keys (final_model.npz)."""
        return {key: array.numpy() for key, array in self.arrays.record(self.params).items()}

    def client_accuracies(self) -> list[float]:
        """Each node's reported accuracy of the global arrays (NaN: an error reply, or no such metric)."""
        return [reply_metric(reply, self.keys.accuracy) for reply in self.evaluate_all()]

    def client_test_sizes(self) -> list[int]:
        """The examples each node evaluated on (0: an error reply, or none reported)."""
        return [int(examples_of(reply, self.keys.examples)) for reply in self.evaluate_all()]


# ---- assembling and running a K-async Flower run ----


def initial_arrays(scenario: Scenario, given: Any = None) -> ArrayRecord:
    """The global model's first arrays: what ``given`` (a function or its ``module:function`` string), else
    ``flower.initial_arrays``, returns."""
    where = "flower.initial_arrays"
    function = load_function(given if given is not None else scenario.flower.initial_arrays, where)
    try:
        return as_array_record(function(), where)
    except ValueError as problem:
        raise ConfigError(str(problem)) from None


def client_app_learning(
    client_app: Any, run_id: int, first_arrays: Any = None, resumed: Checkpoint | None = None
) -> OutsideLearning:
    """What the run loop builds the learning side of a K-async Flower run with (:class:`~asyncfl.runner.parts.
    OutsideLearning`): ``client_app`` trains, on the nodes of the scenario's population (Flower run ``run_id``);
    ``resumed``: the checkpoint a resumed run replays up to (:meth:`ClientAppLearner.replay`)."""

    def build(s: Scenario, device: torch.device) -> ClientAppLearner:
        flower = s.flower
        record = initial_arrays(s, first_arrays)
        arrays = FlatArrays(record, device)
        initial = arrays.flatten(record)
        nodes = FlowerNodes(client_app, s.data.clients, run_id, flower.run_config, flower.work, node_configs(s))
        keys = FlowerKeys(
            lr=float(flower.run_config.get("lr", s.training.lr)),
            accuracy=flower.metrics.accuracy,
            loss=flower.metrics.loss,
            examples=flower.work.examples,
        )
        strategy = make_strategy(s.algorithm, s.data.clients, initial)
        start = start_datetime(s.clock.start_time).timestamp() if s.clock.start_time else 0.0
        learner = ClientAppLearner(
            nodes, arrays, strategy, s.training, keys, initial, s.server.max_staleness, s.seed, MessageTimes(start)
        )
        if resumed is not None:
            learner.replay(resumed)
        return learner

    return build


def run_k_async(
    client_app: Any,
    scenario: Scenario,
    out_dir: str | Path | None = None,
    quiet: bool = True,
    first_arrays: Any = None,
    announce: Callable[[Path], None] | None = None,
    callbacks: Sequence[Callback] = (),
) -> Path:
    """Run ``scenario`` (``server.mode: k_async``) with ``client_app`` (a ClientApp) training every task; returns
    the run directory.  ``first_arrays``: a function in place of ``flower.initial_arrays``.  It checkpoints as a
    native run does (``checkpoint:``; see the module docstring).  The global random generators the ClientApp may
    draw from are seeded from ``seed`` while it runs (:func:`apps_seeded`)."""
    run_id, app_seed = flower_seeds(scenario.seed)
    learning = client_app_learning(client_app, run_id, first_arrays)
    with apps_seeded(app_seed):
        return run_scenario(scenario, out_dir, quiet, announce, callbacks, learning=learning)
