"""A Flower run's run directory, written by the native run's own callbacks (:mod:`asyncfl.runner.callbacks`).

The mapping from messages to records:

- each :meth:`~asyncfl.flower.grid.VirtualGrid.send_and_receive` of train messages is one aggregation: one
  :class:`~asyncfl.runner.record.AggregationRecord` (:func:`~asyncfl.runner.record.record_of` of the closed round
  the Grid hands over), whose updates are the successful replies in arrival order (base version = round - 1,
  staleness 0), ``selected`` the messages pushed, ``failures`` the error replies by reason (``offline``,
  ``battery``, ``client_app``, ...) and the tasks given up at the deadline (``deadline``, also counted ``late``),
  ``train_loss`` each reply's ``train_loss`` metric (NaN where it has none); the strategy's model is out of
  sight, so the round is ``diverged`` (the run stops there, as native runs do: :func:`~asyncfl.runner.record.
  is_diverged`) when a reply's arrays hold a NaN or an infinity, or the train_loss the replies report is not finite;
- an evaluate round (a send_and_receive of evaluate messages) writes metrics.csv's line of the latest
  aggregation, at the virtual time the evaluate round returned: accuracy and loss are the examples-weighted means
  of the replies' ``flower.metrics`` keys (weights: the ``flower.work.examples`` metric), as Flower's FedAvg
  aggregates evaluation metrics.  Evaluate messages are real round trips by default: they cost the clients virtual
  time (download, a forward pass over their examples, upload) like training ones, and the next round starts after
  them; with ``flower.evaluation: untimed`` they are answered at once (see :mod:`asyncfl.flower.grid`).
  A round no evaluate round follows gets a line with NaN accuracy when the next one closes (or the run ends).
  The strategy's server-side evaluation (``evaluate_fn``, heard through :mod:`asyncfl.flower.server_side`) fills
  the same line's ``central_accuracy`` / ``central_loss`` (round 0's: the first line), at the same virtual time.
- secure aggregation (Flower's SecAgg+ workflow, :mod:`asyncfl.flower.secure_aggregation`): the four stages of a
  federated round (four send_and_receive calls) make one record, as a user reads rounds.csv: ``started`` the setup
  stage's push, ``time`` the unmask stage's return (the round's span covers every stage's round trips),
  ``selected`` the clients the setup stage asked, the updates the collect-masked-vectors replies (the clients whose
  masked vectors are in Flower's sum, their task times and train_loss those of that stage), ``failures``, ``late``
  and the lost seconds summed over the stages (a client whose update is in the sum and that then fails to unmask
  counts in both: Flower recovers its mask from its neighbours' shares).  A round whose workflow halted before
  the unmask stage (too few nodes left for the reconstruction threshold: Flower's strategy aggregates nothing) makes
  its record, with no updates, when the next trip (or the run's end) shows it;
- only train rounds are aggregations: an evaluate task that fails shows in clients.csv (whose attempts and
  failures count every task, evaluate ones included; ``participations`` only the train replies delivered, the
  updates, one per SecAgg+ round: its masked vector) and events.jsonl, not in rounds.csv;
  messages pushed with ``push_messages`` and pulled by hand are timed as tasks but make no record.
- summary.json's ``algorithm`` is ``flower ServerApp <flower.server_app>`` (asyncfl cannot see which strategy
  a ServerApp runs, so it does not name one); config.yaml's ``flower:`` names the apps when they were given as
  strings.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from flwr.app import ArrayRecord, Message

from asyncfl.flower.evaluation import arrays_finite, examples_of, metric, reply_metric, weighted_metrics
from asyncfl.flower.grid import Outcome
from asyncfl.flower.nodes import FlowerNodes
from asyncfl.flower.secure_aggregation import COLLECT, LAST
from asyncfl.output.columns import CENTRAL_COLUMNS
from asyncfl.output.writing import Log
from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.callbacks.metrics import MetricsRecorder
from asyncfl.runner.callbacks.stop_rules import StopRules
from asyncfl.runner.loop_guards import LoopGuards, interrupts_deferred
from asyncfl.runner.record import AggregationRecord, Learned, is_diverged, record_of
from asyncfl.runner.simulation import recorded
from asyncfl.runner.timing_learning import TimingLearner
from asyncfl.sim.servers import ClosedRound

NAN = math.nan
TRAIN_LOSS = "train_loss"  # the reply metric of Flower's PyTorch template (as asyncfl.flower.k_async reads)


class FlowerLearner(TimingLearner):
    """The learning side as the end-of-run callbacks read it: nothing is trained by asyncfl (the ClientApps
    train); clients.csv's ``accuracy`` and ``test_samples`` are each client's latest evaluate reply; the final
    model is the arrays the app's ``Strategy.start`` returned (``returned``), else those the last train round sent
    (``sent``)."""

    def __init__(self, num_clients: int) -> None:
        super().__init__(0)
        self.accuracies = [NAN] * num_clients
        self.test_sizes = [0] * num_clients
        self.returned: ArrayRecord | None = None
        self.sent: ArrayRecord | None = None

    def client_accuracies(self) -> list[float]:
        return list(self.accuracies)

    def client_test_sizes(self) -> list[int]:
        return list(self.test_sizes)

    def final_arrays(self) -> dict[str, np.ndarray] | None:
        arrays = self.returned if self.returned is not None else self.sent
        return None if arrays is None else {key: array.numpy() for key, array in arrays.items()}


class EvaluationMetrics(MetricsRecorder):
    """metrics.csv from the evaluate replies and the app's server-side evaluation: an aggregation's line waits for
    the evaluations that follow it (:meth:`evaluated`, then :meth:`central` when the app evaluates on the server);
    a line at virtual time 0 (round 0: the initial model, evaluated only on the server) opens the table as in
    native runs.  The accuracy a line gives the stop rules and summary.json is its federated one, or its central
    one where it has no federated one.  ``central_keys``: the keys of evaluate_fn's MetricRecord read."""

    held: AggregationRecord | None = None  # the aggregation whose line waits for its evaluations
    federated: tuple[float, float, float] | None = None  # (time, accuracy, loss) of the held one, waiting for central

    def __init__(self, out: Any, stop_rules: StopRules, central_keys: tuple[str, str], clock: Any = None) -> None:
        super().__init__(out, None, 1, stop_rules, [], self._extra_columns)
        self.clock, self.central_keys = clock, central_keys
        self.opened = False  # the round-0 line is written
        self.evaluates_centrally = False  # the app's Strategy.start has an evaluate_fn
        self.central_values: dict[str, float] = {}

    def starts(self) -> None:
        """The app's strategy evaluates on the server: metrics.csv gets the central columns, if no line is out yet
        (else they are not recorded: the header is written)."""
        if self.opened or self.evaluates_centrally:
            return
        self.evaluates_centrally = True
        self.out.metrics.close()
        self.out.metrics = Log(self.out.path / "metrics.csv", (*self.out.metrics.columns, *CENTRAL_COLUMNS))

    def on_start(self, state: RunState) -> None:
        """The round-0 line waits: the app's server-side evaluation of the initial model may fill it."""

    def on_aggregation(self, state: RunState, record: AggregationRecord) -> None:
        self._open(state)
        self._flush(state)
        self.held = record

    def evaluated(self, state: RunState, now: float, version: int, accuracy: float, loss: float) -> None:
        """A federated evaluation of the held aggregation (``version``: the Grid's, when none is held)."""
        if self.evaluates_centrally:
            self.federated = (now, accuracy, loss)
            return
        record, self.held = self.held, None
        self._line(state, now, record.round if record else version, record, (accuracy, loss), None)

    def central(self, state: RunState, now: float, server_round: int, metrics: Any) -> None:
        """The app's server-side evaluation of round ``server_round`` (its MetricRecord, or None)."""
        if not self.evaluates_centrally:
            return
        values = tuple(_number(metrics, key) for key in self.central_keys)
        if server_round == 0 and not self.opened:
            self._open(state, values)
            return
        self._open(state)
        record, self.held = self.held, None
        federated, self.federated = self.federated, None
        at = federated[0] if federated else now  # the same moment: server-side evaluation takes no virtual time
        version = record.round if record else server_round
        self._line(state, at, version, record, federated[1:] if federated else None, values)

    def on_end(self, state: RunState, now: float) -> None:
        self._open(state)
        self._flush(state)

    def _open(self, state: RunState, central: tuple[float, float] | None = None) -> None:
        if not self.opened:
            self.opened = True
            self._line(state, 0.0, 0, None, None, central)

    def _flush(self, state: RunState) -> None:
        if self.held is not None:
            record, self.held = self.held, None
            federated, self.federated = self.federated, None
            at = federated[0] if federated else record.time
            self._line(state, at, record.round, record, federated[1:] if federated else None, None)

    def _line(self, state: RunState, now: float, version: int, record: Any, federated: Any, central: Any) -> None:
        """One line of metrics.csv; ``federated`` and ``central``: (accuracy, loss) or None (not evaluated)."""
        accuracy, loss = federated if federated is not None else (NAN, NAN)
        self.evaluate = lambda: (accuracy, loss, [])
        self.central_values = dict(zip(CENTRAL_COLUMNS, central or (NAN, NAN))) if self.evaluates_centrally else {}
        self.write(state, now, version, record, evaluate=federated is not None or central is not None)
        if central is not None and math.isnan(accuracy):  # no federated accuracy: the central one is the measure
            state.progress.note_accuracy(central[0], now, version, self.target)
        progress, stop = state.progress, self.stop_rules.stop
        if stop.target_accuracy is not None and stop.at_target and progress.target_time is not None:
            if progress.status == "running":
                progress.status = "target_reached"
            state.stop = True

    def _extra_columns(self, now: float) -> dict:
        return {**(self.clock(now) if self.clock is not None else {}), **self.central_values}


class ServerSide:
    """Hears the app's ``Strategy.start`` (:mod:`asyncfl.flower.server_side`): its server-side evaluations go to
    metrics.csv at the Grid's virtual time (none after the stop: the rounds the Grid no longer runs), the arrays
    it returns are the final model, and its ``should_stop`` (flwr >= 1.43) is the run's stop."""

    def __init__(self, grid: Any, state: RunState, metrics: EvaluationMetrics, learner: FlowerLearner) -> None:
        self.grid, self.state, self.metrics, self.learner = grid, state, metrics, learner

    def starts(self, evaluates: bool) -> None:
        if evaluates:
            self.metrics.starts()

    def central(self, server_round: int, metrics: Any) -> None:
        if not self.grid.stopped:
            self.metrics.central(self.state, self.grid.env.now, server_round, metrics)

    def returned(self, arrays: ArrayRecord) -> None:
        self.learner.returned = arrays

    def should_stop(self) -> bool:
        return self.state.stop


class FlowerRecorder:
    """The run loop's round closing for a Flower ServerApp (:func:`~asyncfl.runner.simulation.run_loop` calls it
    with every send_and_receive's :class:`Outcome` the Grid hands over): the callbacks hear what they hear in a
    native run (:func:`~asyncfl.runner.simulation.recorded`), with Ctrl-C held back while a round is written and
    the loop's garbage collection (:class:`~asyncfl.runner.loop_guards.LoopGuards`) at each aggregation; it answers
    the run's stop.  The learning side is the ClientApps' and the strategy's (:class:`FlowerLearner` stands in)."""

    def __init__(
        self,
        nodes: FlowerNodes,
        metric_keys: Any,
        state: RunState,
        callbacks: Sequence[Callback],
        metrics: EvaluationMetrics,
        learner: FlowerLearner,
        round_spans: list,
    ) -> None:
        self.nodes, self.keys, self.state, self.callbacks = nodes, metric_keys, state, list(callbacks)
        self.metrics, self.learner, self.round_spans = metrics, learner, round_spans
        self.train_examples: dict[int, int] = {}
        self.stages: list[Outcome] = []  # the SecAgg+ stage trips of the round under way
        self.guards: LoopGuards | None = None  # while the ServerApp runs (guarded)

    @contextmanager
    def guarded(self) -> Iterator[None]:
        """The run loop's guards while the ServerApp runs: at each aggregation one garbage collection of what it
        made, then everything alive frozen (:class:`~asyncfl.runner.loop_guards.LoopGuards`)."""
        with LoopGuards() as self.guards:
            try:
                yield
            finally:
                self.guards = None

    def __call__(self, outcome: Outcome) -> bool:
        with interrupts_deferred():  # the trip's rows are written all or not at all
            self._close(outcome)
        return self.state.stop

    def _close(self, outcome: Outcome) -> None:
        if outcome.halted:
            self.close()  # the workflow halted: the stages held are their round's
        if outcome.stage is not None:
            self.stages.append(outcome)
            if outcome.stage == LAST:
                self.close()
        elif any(task.train for task in outcome.tasks):
            self.aggregated(outcome)
        else:
            self.evaluated(outcome)

    def close(self) -> None:
        """The SecAgg+ stages held (if any) as the one aggregation of their round (see the module docstring)."""
        if self.stages:
            stages, self.stages = self.stages, []
            collect = next((o for o in stages if o.stage == COLLECT), None) if stages[-1].stage == LAST else None
            self.aggregated(secure_round(stages, collect))  # collect None: halted, nothing aggregated

    def aggregated(self, outcome: Outcome) -> None:
        closed = outcome.closed
        by_plan = {id(task.plan): task for task in outcome.tasks}
        self.learner.sent = next((sent_arrays(task.message) for task in outcome.tasks), self.learner.sent)
        replies = [by_plan[id(plan)].reply for plan in closed.received]
        losses = [reply_metric(reply, TRAIN_LOSS) for reply in replies]
        for plan, reply in zip(closed.received, replies):
            self.train_examples[plan.client] = int(examples_of(reply, self.nodes.work.examples))
        # the strategy's model is out of sight: it is diverged when what it was made of is (the one rule)
        reported = [loss for loss, reply in zip(losses, replies) if metric(reply.content, TRAIN_LOSS) is not None]
        diverged = is_diverged(all(arrays_finite(reply) for reply in replies), reported)
        learned = Learned(tuple(losses), tuple(x * x for x in losses), diverged=diverged)
        record = record_of(closed, [0] * len(closed.received), learned)
        if self.guards is not None:
            self.guards.round_closed()
        self.round_spans.append((closed.started, closed.time, closed.round - 1))
        recorded(self.state, self.callbacks, record)

    def evaluated(self, outcome: Outcome) -> None:
        keys, examples = self.keys, self.nodes.work.examples
        replies = [task.reply for task in outcome.returned]
        for task in outcome.returned:
            if not task.reply.has_error():
                self.learner.accuracies[task.plan.client] = reply_metric(task.reply, keys.accuracy)
                self.learner.test_sizes[task.plan.client] = int(examples_of(task.reply, examples))
        if not any(examples_of(reply, examples) > 0 for reply in replies):
            return
        means = weighted_metrics(replies, (keys.accuracy, keys.loss), examples)  # the one rule (K-async's too)
        accuracy, loss = means[keys.accuracy], means[keys.loss]
        closed = outcome.closed
        self.metrics.evaluated(self.state, closed.time, closed.round - 1, accuracy, loss)


def _number(metrics: Any, key: str) -> float:
    """``metrics[key]`` (a MetricRecord, or None) when it is a number, else NaN."""
    value = None if metrics is None else metrics.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else NAN


def sent_arrays(message: Message) -> ArrayRecord | None:
    """The first ArrayRecord a pushed message carries (a train message: the global model it sends)."""
    records = message.content.array_records if message.has_content() else {}
    return next(iter(records.values()), None)


def expected_rounds(stop_rounds: int | None, run_config: Any) -> int | None:
    """The progress bar's total: the fewer of ``stop.rounds`` and the run config's ``num-server-rounds`` (the rounds
    key of Flower's app templates, ``flwr new``, when it is a whole number > 0), of those there are; else none."""
    server_rounds = run_config.get("num-server-rounds")
    known = [stop_rounds] if stop_rounds is not None else []
    if isinstance(server_rounds, int) and not isinstance(server_rounds, bool) and server_rounds > 0:
        known.append(server_rounds)
    return min(known, default=None)


def secure_round(stages: Sequence[Outcome], collect: Outcome | None) -> Outcome:
    """One round of SecAgg+ stages as one closed round (see the module docstring); ``collect``: its
    collect-masked-vectors stage, whose replies are the updates (None: none aggregated)."""
    first = stages[0].closed
    closed = ClosedRound(first.round, first.started, stages[-1].closed.time, selected=list(first.selected))
    for outcome in stages:
        stage = outcome.closed
        closed.late += stage.late
        closed.failures.update(stage.failures)
        closed.failed_clients += stage.failed_clients
        closed.lost_s += stage.lost_s
        closed.lost_compute_s += stage.lost_compute_s
        closed.timed_out += stage.timed_out
    if collect is None:
        return Outcome(closed, [])
    closed.received = list(collect.closed.received)
    return Outcome(closed, list(collect.tasks), list(collect.returned))
