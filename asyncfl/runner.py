"""One simulation from a validated scenario to a finished run directory."""

from __future__ import annotations

import gc
import json
import math
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import simpy
import torch
import yaml

from asyncfl.algorithms import make_strategy
from asyncfl.callbacks.base import Aggregation, Callback, Progress, RunState
from asyncfl.callbacks.checkpointer import Checkpointer
from asyncfl.callbacks.end_of_run import end_of_run
from asyncfl.callbacks.metrics import MetricsRecorder
from asyncfl.callbacks.progress_bar import ProgressBar
from asyncfl.callbacks.round_log import RoundLog
from asyncfl.callbacks.stop_rules import StopRules
from asyncfl.checkpoint import CheckpointWriter
from asyncfl.config.clock import start_datetime
from asyncfl.config.runnable import scenario_warnings
from asyncfl.config.schema import Scenario
from asyncfl.errors import ConfigError
from asyncfl.learn.compression import upload_bytes
from asyncfl.learn.datasets import dataset_spec
from asyncfl.learn.executors import float32_precision, make_trainer, training_threads
from asyncfl.learn.federation import build_federation, client_train_sizes
from asyncfl.learn.models import build_model_of, parameter_count
from asyncfl.learn.partition import cluster_of_clients
from asyncfl.learner import Learner, TimingLearner
from asyncfl.loop_guards import RunInterrupted, RunOutOfMemory, collections_per_aggregation, interrupts_deferred
from asyncfl.output.columns import class_accuracy_columns, metrics_extra_columns, rounds_extra_columns
from asyncfl.output.files import write_atomic
from asyncfl.output.folders import make_directory, missing_directories, remove_empty
from asyncfl.output.lock import writing
from asyncfl.output.run_directory import RunDirectory, new_run_dir, speed_bins, speed_order, timeline_sample
from asyncfl.sections import resolved_dump
from asyncfl.seeding import stream
from asyncfl.selection_feedback import FeedbackRecorder
from asyncfl.sim.clients import Work, check_time_budget
from asyncfl.sim.population import build_clients, participation_probabilities
from asyncfl.sim.servers import SERVER_MODES, RoundInfo, ServerContext

Announce = Callable[[Path], None]  # told the run directory when a run starts (the CLI prints it)


def resolve_device(choice: str) -> torch.device:
    if choice == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: cuda was asked for but no CUDA device is available here; allowed: auto, cpu, cuda.")
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


class Simulation:
    """The run loop: wires the timing world (SimPy servers, clients) to the learning world (the
    learner) and hands every aggregation to the callbacks of :mod:`asyncfl.callbacks`, in order."""

    def __init__(
        self,
        scenario: Scenario,
        run_dir: Path,
        quiet: bool = True,
        resume: dict | None = None,
        callbacks: Sequence[Callback] = (),
    ) -> None:
        """``resume``: a checkpoint (:mod:`asyncfl.checkpoint`) to continue from."""
        self.scenario, self.resume, self.replayed = scenario, resume, 0
        self.device = resolve_device(scenario.device)
        self.state = RunState()
        s = scenario
        self.threads: int | None = None  # torch CPU threads while running (trainer.threads)
        if s.timing_only:  # no data, no model: see TimingLearner
            self.federation, self.learner, histograms = None, TimingLearner(timing_model_bytes(s)), None
            num_classes = dataset_spec(s.data)[1]
        else:
            self.federation = build_federation(s.data, s.seed, self.device)
            self.learner = self._build_learner(s)
            histograms = np.stack([self.federation.label_histogram(c) for c in range(s.data.clients)])
            num_classes = self.federation.num_classes
        part = s.data.partition
        clusters = cluster_of_clients(s.data.clients, part.clusters) if part.kind == "clusters" else None
        start = start_datetime(s.clock.start_time) if s.clock.start_time else None
        start_s_of_day = (
            0.0 if start is None else start.hour * 3600 + start.minute * 60 + start.second + start.microsecond / 1e6
        )
        self.clients = build_clients(s.population, s.data.clients, s.seed, histograms, clusters, start_s_of_day)
        self.probabilities = participation_probabilities(s.population.availability, s.data.clients, s.seed, histograms)
        self.learner.participation = tuple(self.probabilities)
        if self.federation is not None:
            samples = [len(idx) for idx in self.federation.client_train]
        else:  # timing_only: the clients' sample counts as a training run deals them, where that is cheap
            samples = client_train_sizes(s.data, s.seed)
        for client, size in zip(self.clients, samples or []):  # None: every client does full batches
            client.train_samples = size
        self.selection_feedback = FeedbackRecorder(s, self.learner, samples)  # what server.selection reads
        battery = s.population.battery
        self.work = Work(
            s.training.local_steps,
            s.training.batch_size,
            self.learner.model_bytes,
            battery.joules_per_sample if battery else 0.0,
            battery.joules_per_byte if battery else 0.0,
            upload_bytes=compressed_upload_bytes(s, self.learner.model_bytes),
            **s.training.local_work.work_limits(),
        )
        check_time_budget(self.work.time_budget_s, self.work.batch_size, self.clients.speeds(), samples)
        class_columns = class_accuracy_columns(num_classes) if s.eval.per_class else []
        offsets = resume["offsets"] if resume else None
        order = speed_order(self.clients.speeds())  # read without building every client
        timeline = timeline_sample(self.clients.speeds(), order=order)
        reasons = added_failure_reasons(s)
        extra_metrics = metrics_extra_columns(len(class_columns), start is not None)
        extra_rounds = rounds_extra_columns(reasons)
        self.out = RunDirectory(
            run_dir,
            s.output.events,
            s.output.event_sample,
            extra_metrics,
            offsets,
            timeline,
            extra_rounds,
            format=s.output.format,
            speed_bins=speed_bins(order),
        )
        self.round_spans: list[tuple[float, float, int]] = []  # (start, close, round) for offline_periods.csv
        self.callbacks = self._callbacks(quiet, class_columns, start, reasons) + list(callbacks)  # users' last

    def _callbacks(self, quiet: bool, class_columns: list[str], start, reasons: list[str]) -> list[Callback]:
        """What the run does at each aggregation, in this order (see :mod:`asyncfl.callbacks`)."""
        s, out = self.scenario, self.out
        stop_rules = StopRules(s.stop)
        evaluate = None if s.timing_only else self.learner.test_metrics
        clock = (lambda now: {"utc_time": utc_time(start, now)}) if start is not None else None
        return [
            RoundLog(out, reasons),
            MetricsRecorder(out, evaluate, s.eval.every_rounds, stop_rules, class_columns, clock),
            stop_rules,
            Checkpointer(out, s.checkpoint, CheckpointWriter(out.path), self._learning_state),
            ProgressBar(s.stop.rounds, quiet),
            *end_of_run(s, out, self.clients, self.probabilities, self.learner, self.device, self.round_spans, reasons),
        ]

    def _build_learner(self, s: Scenario) -> Learner:
        with torch.random.fork_rng(devices=[]):  # model init must not touch the global generator
            torch.manual_seed(int(stream(s.seed, "model_init").integers(2**62)))
            self.model = build_model_of(s.model, self.federation.input_shape, self.federation.num_classes)
        self.model.to(self.device)
        initial = torch.nn.utils.parameters_to_vector(self.model.parameters()).detach()
        strategy = make_strategy(s.algorithm, s.data.clients, initial)
        trainer = make_trainer(self.model, self.federation, s.training, s.seed, s.trainer, self.device)
        self.threads = training_threads(self.model, self.device, s.trainer)
        # a key of another server mode is always at its default (None here): the schema refuses it
        return Learner(self.model, self.federation, strategy, trainer, s.training, s.server.max_staleness, seed=s.seed)

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

    def _play(self) -> Progress:
        s = self.scenario
        env = simpy.Environment()
        limit = s.stop.virtual_time_s if s.stop.virtual_time_s is not None else math.inf
        if self.resume is None:
            for callback in self.callbacks:
                callback.on_start(self.state)
        elif self.resume["aggregations"] == 0:  # killed before the first aggregation: nothing to replay
            self._replay_round()
        context = ServerContext(
            env, self.clients, self.work, s.server, s.seed, self._submit, self._close_round, self._log, limit,
            logs_client=self.out.logs_client, feedback=self.selection_feedback.feedback,
        )  # fmt: skip
        process = env.process(SERVER_MODES[s.server.mode].process(context))
        try:
            with collections_per_aggregation():
                self.state.stalled = env.run(until=process)  # why the server gave up, if it did
            if self.progress.status == "running":
                self.progress.status = "finished"
        except KeyboardInterrupt:
            self.progress.status = "interrupted"  # summary and figures for what has run, then re-raise
            raise RunInterrupted(self.out.path) from None
        except MemoryError:  # the files of what has run are written; finish() raises RunOutOfMemory
            self.progress.status = "out_of_memory"  # not ended: it resumes from its last checkpoint
            self.state.failed_stage = "simulation"
        finally:
            self.finish(env.now)
        return self.progress

    def _submit(self, plan) -> None:
        if self.resume is None:  # while replaying, the checkpoint's job book already holds these jobs
            self.learner.submit(plan)

    def _log(self, t: float, client: int | None, event: str, version: int | None, reason: str | None) -> None:
        # while replaying up to a checkpoint the lines are already on disk
        self.out.event(t, client, event, version, reason, replaying=self.resume is not None)

    def _close_round(self, info: RoundInfo) -> bool:
        gc.collect()  # only what this round made: everything older is frozen
        gc.freeze()  # see collections_per_aggregation
        self.round_spans.append((info.started, info.time, info.round))
        if self.resume is not None:
            self.selection_feedback.replay(self.resume["learner"].get("feedback_log", []), self.replayed)
            return self._replay_round()
        updates = self.learner.collect_updates(info)  # training: Ctrl-C may land here at any moment
        with interrupts_deferred():  # the round's state and its rows are written all or not at all
            report = self.learner.apply(info, updates, self.scenario.algorithm.record_weights)
            self.selection_feedback.aggregated(info, updates, report.version)
            nonfinite_loss = bool(report.staleness) and not math.isfinite(report.train_loss)
            diverged = self.learner.diverged() or (nonfinite_loss and not self.scenario.timing_only)
            aggregation = Aggregation(info, report, [u.client for u in updates], diverged)
            self.progress.count(report)
            for callback in self.callbacks:
                callback.on_aggregation(self.state, aggregation)
            return self.state.stop

    def _learning_state(self) -> dict:
        """The learner's part of a checkpoint, with the feedback every aggregation so far recorded."""
        return {**self.learner.state(), **self.selection_feedback.state()}

    def _replay_round(self) -> bool:
        """Resuming: the clock world is replayed from t = 0 (it never depends on what is learned) with
        every callback muted; at the checkpoint's aggregation the learning state is swapped in, the
        callbacks hear ``on_resume`` and the run goes on live."""
        checkpoint = self.resume
        self.replayed += 1 if checkpoint["aggregations"] else 0
        if self.replayed < checkpoint["aggregations"]:
            return False
        self.learner.restore(checkpoint["learner"])
        progress = Progress(**checkpoint["progress"])
        self.state = RunState(progress, time.perf_counter() - checkpoint["elapsed_s"], checkpoint["stop"])
        for callback in self.callbacks:
            callback.on_resume(self.state, checkpoint)
        self.resume = None
        return checkpoint["stop"]

    def finish(self, now: float) -> None:
        """Close the bar; write clients.csv, offline_periods.csv, summary.json and the figures for
        whatever has run (:func:`asyncfl.callbacks.end_of_run.end_of_run`).  Out of memory in one of
        them: the others still write their files (but no figure is drawn), summary.json names the
        stage that failed, and :class:`RunOutOfMemory` is raised."""
        state = self.state
        state.scenario_warnings = scenario_warnings(self.scenario)
        for callback in self.callbacks:
            if state.failed_stage is not None and callback.stage == "figures":
                continue  # memory is short: drawing would fail too, and nothing else needs them
            try:
                callback.on_end(state, now)
            except MemoryError:
                state.failed_stage = state.failed_stage or callback.stage
        if state.failed_stage is not None:
            self._record_failure(state)
            raise RunOutOfMemory(self.out.path, state.failed_stage) from None

    def _record_failure(self, state: RunState) -> None:
        """summary.json with ``failed_stage`` (written whole, over the one the run wrote, if any)."""
        path = self.out.path / "summary.json"
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # the summary's own stage failed: say what is known
            summary = {"status": state.progress.status, "rounds": state.progress.rounds}
        error = f"out of memory in the {state.failed_stage} stage"
        self.out.write_json("summary.json", {**summary, "failed_stage": state.failed_stage, "error": error})


def timing_model_bytes(s: Scenario) -> int:
    """Bytes of the float32 model a full run would train: its real parameter count x 4."""
    shape, classes = dataset_spec(s.data)  # from the data set's registration: nothing is loaded
    model = build_model_of(s.model, shape, classes)
    return parameter_count(model) * 4


def compressed_upload_bytes(s: Scenario, model_bytes: int) -> int | None:
    """Bytes of one upload under ``training.compression`` (None: uncompressed, the model's bytes);
    the model is float32, so it has model_bytes / 4 parameters."""
    spec = s.training.compression
    return None if spec.kind == "none" else upload_bytes(spec, model_bytes // 4)


def added_failure_reasons(s: Scenario) -> list[str]:
    """The failure reasons ``population.eligibility`` and over-selection add (their failed_* columns
    exist only then)."""
    reasons = s.population.eligibility.reasons() if s.population.eligibility is not None else []
    return reasons + (["cancelled"] if s.server.over_selection > 0 else [])


def utc_time(start, now: float) -> str:
    """``clock.start_time`` + ``now`` virtual seconds, as ISO UTC to the second."""
    from datetime import timedelta

    return (start + timedelta(seconds=now)).strftime("%Y-%m-%dT%H:%M:%S")


def run_scenario(
    scenario: Scenario,
    out_dir: str | Path | None = None,
    quiet: bool = True,
    announce: Announce | None = None,
    callbacks: Sequence[Callback] = (),
) -> Path:
    """Run ``scenario`` and return its run directory (``output.dir/<name>/<timestamp>`` by default).
    ``announce(run_dir)`` is called once the directory is made and held, before anything is loaded;
    ``callbacks`` (:class:`asyncfl.Callback`) are called after the built-in ones.

    The run holds its directory (:func:`asyncfl.output.lock.writing`) until it ends: a second writer is
    refused.  A run that fails before it starts (a data set or trace file that cannot be read, Ctrl-C
    while loading) leaves nothing behind: what this call wrote and the directories it made are removed."""
    out_dir = Path(out_dir) if out_dir is not None else None
    # a directory that already holds files (a run restarted by --resume) is never cleared
    clear = out_dir is None or not out_dir.exists() or not any(out_dir.iterdir())
    if out_dir is None:
        made = missing_directories(scenario.output.dir / scenario.name)
        run_dir = new_run_dir(scenario.output.dir, scenario.name)
        made.insert(0, run_dir)
    else:
        run_dir, made = out_dir, make_directory(out_dir, "--out")
    with ExitStack() as held:
        try:
            held.enter_context(writing(run_dir))
        except ConfigError:  # another process writes there: nothing in it is ours to remove
            remove_empty(made)
            raise
        try:
            if announce is not None:
                announce(run_dir)
            write_atomic(run_dir / "config.yaml", yaml.safe_dump(resolved_dump(scenario), sort_keys=False))
            simulation = Simulation(scenario, run_dir, quiet, callbacks=callbacks)
        except BaseException:
            if clear:
                _remove_unstarted(run_dir, made)
            raise
        simulation.run()
    return run_dir


def _remove_unstarted(run_dir: Path, made: list[Path]) -> None:
    """Empty ``run_dir`` (nothing was recorded in it yet), then remove the directories made for it."""
    import shutil

    for child in run_dir.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    remove_empty(made)


def resume_run(run_dir: Path, quiet: bool = True, announce: Announce | None = None) -> Path:
    """Continue a run that was killed (at any moment) from its last checkpoint; see asyncfl.checkpoint.
    Nothing is read for the resume nor written before the run directory is held."""
    from asyncfl.checkpoint import load_for_resume

    if not run_dir.is_dir():
        raise ConfigError(f"--resume {run_dir}: no such run directory.")
    with writing(run_dir):
        scenario, checkpoint = load_for_resume(run_dir)
        if announce is not None:
            announce(run_dir)
        if checkpoint is None:  # died before its first checkpoint: start it again in place
            return run_scenario(scenario, run_dir, quiet)
        Simulation(scenario, run_dir, quiet, resume=checkpoint).run()
    return run_dir
