"""The run loop: one simulation from its assembled parts to a finished run directory.

The loop is a SimPy process beside the server's: it waits for each round the server closes
(:class:`asyncfl.sim.servers.RoundHandoff`), has the learning side train and aggregate it, builds the
aggregation's one :class:`~asyncfl.runner.record.AggregationRecord`, hands it to the callbacks, and answers
the server (stop or go on).  A Flower ServerApp's rounds go through the same loop (:func:`run_loop`,
:func:`recorded`): the virtual Grid hands each closed trip over as a server does (:mod:`asyncfl.flower.grid`).
One K-async update's path from its finished compute to its row in rounds.csv:

1. the client's task process puts its plan in the server's inbox (``k_async_server``);
2. the server hands the closed round to this loop (``RoundHandoff.close`` -> :func:`run_loop`);
3. the loop has the learning side train and aggregate it (:meth:`Simulation._close_round`: ``train``, ``apply``)
   and builds the record (:func:`~asyncfl.runner.record.record_of`);
4. the callbacks read the record (``RoundLog.on_aggregation`` writes its rounds.csv row).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Sequence

import simpy
import torch

from asyncfl.config.runnable import scenario_warnings
from asyncfl.config.schema import Scenario
from asyncfl.learn.executors import float32_precision
from asyncfl.runner.callbacks.base import Callback, Checkpoint, Progress, RunState
from asyncfl.runner.loop_guards import LoopGuards, RunInterrupted, interrupts_deferred
from asyncfl.runner.parts import OutsideLearning, assemble, live_callbacks
from asyncfl.runner.record import AggregationRecord, record_of, staleness_of
from asyncfl.runner.replay import ReplayLearner, ReplayUntil, SavedFeedback
from asyncfl.runner.run_end import end_callbacks, run_end
from asyncfl.sim.servers import SERVER_MODES, ClosedRound, RoundHandoff, ServerContext
from asyncfl.sim.servers.base import happen_now


class Simulation:
    """Plays a scenario: the timing world (SimPy servers, clients) hands each closed round to the run loop,
    which has the learning side aggregate it and the callbacks of :mod:`asyncfl.runner.callbacks` record it.

    A resumed run (``resume``: a checkpoint, :mod:`asyncfl.runner.checkpoint`) starts with stand-ins in the
    live parts' places (:mod:`asyncfl.runner.replay`) and swaps the live ones in at the checkpoint's
    aggregation (:meth:`go_live`)."""

    def __init__(
        self,
        scenario: Scenario,
        run_dir: Path,
        quiet: bool = True,
        resume: Checkpoint | None = None,
        callbacks: Sequence[Callback] = (),
        learning: OutsideLearning | None = None,
    ) -> None:
        """``learning``: the learning side of a trainer outside asyncfl (:class:`~asyncfl.runner.parts.
        OutsideLearning`; None: asyncfl trains)."""
        self.scenario, self.resume = scenario, resume
        parts = assemble(scenario, run_dir, resume["offsets"] if resume else None, learning)
        self.parts = parts
        self.device, self.federation, self.clients = parts.device, parts.federation, parts.clients
        self.probabilities, self.out, self.round_spans = parts.probabilities, parts.out, parts.round_spans
        self.selection_feedback, self.threads = parts.selection_feedback, parts.threads
        self.live_learner = parts.learner
        self.live_callbacks = live_callbacks(parts, quiet, self._learning_state) + list(callbacks)  # users' last
        self.state = RunState()
        self.record_weights = scenario.algorithm.record_weights
        # what the loop works with: the live parts, or the replay's stand-ins until the checkpoint
        self.learner, self.feedback, self.callbacks = self.live_learner, self.selection_feedback, self.live_callbacks
        self.log_event: Callable = self.out.event
        if resume is not None and resume["aggregations"] > 0:
            self.learner = ReplayLearner()
            self.feedback = SavedFeedback(self.selection_feedback, saved_feedback(resume))
            self.callbacks = [ReplayUntil(resume["aggregations"], self.go_live)]
            self.log_event = self._replayed_event

    @property
    def progress(self) -> Progress:
        return self.state.progress

    def run(self) -> Progress:
        """Play the scenario to its end with ``trainer.threads`` torch threads and ``trainer.tf32``'s float32
        precision; the caller's settings are restored."""
        previous = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            with float32_precision(self.scenario.trainer):
                return self._play()
        finally:
            torch.set_num_threads(previous)
            self.live_learner.jobs.close()  # trainer.workers' actors

    def _play(self) -> Progress:
        s = self.scenario
        env = simpy.Environment()
        limit = s.stop.virtual_time_s if s.stop.virtual_time_s is not None else math.inf
        rounds = RoundHandoff(env)
        context = ServerContext(
            env, self.clients, self.parts.work, s.server, s.seed, rounds, self._log, limit,
            logs_client=self.out.logs_client, feedback=self.selection_feedback.feedback,
        )  # fmt: skip
        env.process(run_loop(env, rounds, self._close_round))  # first: it waits before the server can close one
        server = env.process(SERVER_MODES[s.server.mode].process(context))
        try:
            # whatever ends it, the files of what has run are written and summary.json says how it ended
            with run_end(self.state, self.out.path, lambda: self.finish(env.now)):
                self._begin()
                with LoopGuards() as self.guards:
                    self.state.stalled = env.run(until=server)  # why the server gave up, if it did
        except KeyboardInterrupt:  # summary and figures for what has run are written: say where to resume
            raise RunInterrupted(self.out.path) from None
        return self.progress

    def _begin(self) -> None:
        """A fresh run's callbacks hear ``on_start``; a resumed one killed before its first aggregation has
        nothing to replay."""
        if self.resume is None:
            for callback in self.callbacks:
                callback.on_start(self.state)
        elif self.resume["aggregations"] == 0:
            self.go_live()

    def _close_round(self, closed: ClosedRound) -> bool:
        """One aggregation: train, aggregate, record, call back; True stops the run."""
        self.guards.round_closed()
        self.round_spans.append((closed.started, closed.time, closed.round - 1))
        learner = self.learner
        learner.queue(closed.started_tasks)
        staleness = staleness_of(closed)
        updates = learner.train(closed, staleness)  # training: Ctrl-C may land here at any moment
        with interrupts_deferred():  # the round's state and its rows are written all or not at all
            record = record_of(closed, staleness, learner.apply(closed, updates, self.record_weights))
            self.feedback.aggregated(record)
            return recorded(self.state, self.callbacks, record)

    def _log(self, t: float, client: int | None, event: str, version: int | None, reason: str | None) -> None:
        """The servers' and clients' event sink: the run directory's, or a resumed run's muted one until its
        checkpoint (:meth:`go_live` swaps them)."""
        self.log_event(t, client, event, version, reason)

    def _replayed_event(self, t: float, client: int | None, event: str, version: int | None, reason: str | None):
        # replaying up to a checkpoint: the lines are on disk already (the timeline's open tasks are followed)
        self.out.event(t, client, event, version, reason, replaying=True)

    def go_live(self) -> None:
        """Resuming, at the checkpoint's aggregation: the learning state, the progress record and the live
        callbacks and event log take the stand-ins' places; the callbacks hear ``on_resume``."""
        checkpoint = self.resume
        self.live_learner.restore(checkpoint["learner"])
        self.learner, self.feedback, self.callbacks = self.live_learner, self.selection_feedback, self.live_callbacks
        self.log_event = self.out.event
        state = self.state  # the same object run_end holds, with the checkpoint's progress
        state.progress = Progress(**checkpoint["progress"])
        state.started, state.stop = time.perf_counter() - checkpoint["elapsed_s"], checkpoint["stop"]
        for callback in self.callbacks:
            callback.on_resume(state, checkpoint)

    def _learning_state(self) -> dict:
        """The learning side's part of a checkpoint, with the feedback every aggregation so far recorded."""
        return {**self.live_learner.state(), **self.selection_feedback.state()}

    def finish(self, now: float) -> None:
        """Close the bar; write clients.csv, offline_periods.csv, summary.json and the figures for
        whatever has run (:func:`asyncfl.runner.callbacks.end_of_run.end_of_run`, through
        :func:`asyncfl.runner.run_end.end_callbacks`: a failure in one of them leaves the others to write
        their files and summary.json names its stage)."""
        self.state.scenario_warnings = scenario_warnings(self.scenario)
        end_callbacks(self.state, now, self.live_callbacks, self.out)


def run_loop(env: simpy.Environment, rounds: RoundHandoff, close_round: Callable[[Any], bool]):
    """The run loop as a SimPy process, a native run's (:class:`Simulation`) and a Flower ServerApp's
    (:mod:`asyncfl.flower.start`): each closed round in, ``close_round``'s answer (True: stop) back out.  An error
    leaves ``env.run`` (or ``env.step``) at once (:func:`raise_now`), as if the server had called the loop."""
    while True:
        closed, answer = yield rounds.next_round()
        try:
            stop = close_round(closed)
        except BaseException as error:
            raise_now(env, error)
            return
        rounds.reply(answer, stop)


def recorded(state: RunState, callbacks: Sequence[Callback], record: AggregationRecord) -> bool:
    """What every aggregation ends with, native or Flower: counted in the run's progress and heard by the
    callbacks (the caller holds Ctrl-C back around it: :func:`~asyncfl.runner.loop_guards.interrupts_deferred`);
    True: the run stops."""
    state.progress.count(record)
    for callback in callbacks:
        callback.on_aggregation(state, record)
    return state.stop


def saved_feedback(checkpoint: Checkpoint) -> list:
    """What the selection policy was told at each aggregation up to the checkpoint."""
    return checkpoint["learner"].get("feedback_log", [])


def raise_now(env: simpy.Environment, error: BaseException) -> None:
    """Raise ``error`` out of ``env.run`` before any other event of this moment runs: a callback of an event
    that happens right away raises it (as SimPy's own ``StopSimulation`` leaves ``run``); a failed process
    would wait for its turn among the events of this moment."""

    def reraise(event: simpy.Event) -> None:
        raise error

    event = env.event()
    event.callbacks.append(reraise)
    happen_now(event, None)
