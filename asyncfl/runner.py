"""One simulation from a validated scenario to a finished run directory."""

from __future__ import annotations

import gc
import math
import platform
import signal
import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import simpy
import torch
import yaml
from tqdm import tqdm

from asyncfl.algorithms import make_strategy
from asyncfl.checkpoint import FILE as CHECKPOINT_FILE
from asyncfl.checkpoint import FINAL
from asyncfl.config import ConfigError
from asyncfl.config.schema import Scenario, start_datetime
from asyncfl.learn.executors import make_trainer, training_threads
from asyncfl.learn.federation import build_federation
from asyncfl.learn.jobs import JobBook
from asyncfl.learn.models import build_model, parameter_count
from asyncfl.learn.partition import cluster_of_clients
from asyncfl.learner import AggregationReport, Learner
from asyncfl.results import OfflineMeter, RunDirectory, new_run_dir, timeline_sample, write_atomic
from asyncfl.seeding import stream
from asyncfl.sim.clients import ClientDevice, Work, phase_seconds
from asyncfl.sim.population import build_clients, participation_probabilities, utc_offsets
from asyncfl.sim.servers import SERVER_MODES, RoundInfo, ServerContext


def resolve_device(choice: str) -> torch.device:
    if choice == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: cuda was asked for but no CUDA device is available here; allowed: auto, cpu, cuda.")
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run, after summary.json and the figure were written: names the run directory
    so that the command line can say how to continue it."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


@contextmanager
def interrupts_deferred():
    """Hold back Ctrl-C (SIGINT) for the duration of the block and raise it afterwards, so that an
    interrupt never lands between a round's state change and the rows that record it. Only the main
    thread with Python's default handler is affected; elsewhere (workers, custom handlers) this is a no-op."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise KeyboardInterrupt


@contextmanager
def collections_per_aggregation():
    """Python's cyclic garbage collector, left as it is, took about 40 % of a timing-only run of
    10^5 clients: every full collection walks every live object (plans, clients, streams), and a
    large run keeps millions alive.  During the simulation, at each aggregation, one full collection
    looks at what the round made (garbage cycles are freed, never frozen) and then everything alive
    is frozen (``gc.freeze``: later collections skip it; reference counting still frees it), and
    young collections run less often, so no collection walks the whole population again.
    Afterwards everything is unfrozen and the thresholds restored.  Results never depend on it."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], 10_000), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@dataclass
class Progress:
    """Best/target bookkeeping for summary.json."""

    best_accuracy: float = math.nan
    last_accuracy: float = math.nan
    target_time: float | None = None
    target_round: int | None = None
    status: str = "running"
    rounds: int = 0
    staleness: list[int] = field(default_factory=list)


class Simulation:
    """Wires the timing world (SimPy servers, clients) to the learning world (Learner)."""

    def __init__(self, scenario: Scenario, run_dir: Path, quiet: bool = True, resume: dict | None = None) -> None:
        """``resume``: a checkpoint (:mod:`asyncfl.checkpoint`) to continue from."""
        self.scenario, self.quiet = scenario, quiet
        self.resume, self.replayed = resume, 0
        self.device = resolve_device(scenario.device)
        self.started = time.perf_counter()
        s = scenario
        self.threads: int | None = None  # torch CPU threads while running (trainer.threads)
        if s.timing_only:  # no data, no model: see TimingLearner
            self.federation, self.learner, histograms = None, TimingLearner(timing_model_bytes(s)), None
            num_classes = timing_input(s)[1]
        else:
            self.federation = build_federation(s.data, s.seed, self.device)
            self.learner = self._build_learner(s)
            histograms = np.stack([self.federation.label_histogram(c) for c in range(s.data.clients)])
            num_classes = self.federation.num_classes
        part = s.data.partition
        clusters = cluster_of_clients(s.data.clients, part.clusters) if part.kind == "clusters" else None
        self.start = start_datetime(s.clock.start_time) if s.clock.start_time else None
        start_s_of_day = (
            0.0
            if self.start is None
            else (self.start.hour * 3600 + self.start.minute * 60 + self.start.second + self.start.microsecond / 1e6)
        )
        self.clients = build_clients(s.population, s.data.clients, s.seed, histograms, clusters, start_s_of_day)
        self.probabilities = participation_probabilities(s.population.availability, s.data.clients, s.seed, histograms)
        self.learner.participation = tuple(self.probabilities)
        for client, idx in zip(self.clients, self.federation.client_train if self.federation else []):
            client.train_samples = len(idx)  # timing_only: every client does full batches
        battery = s.population.battery
        self.work = Work(
            s.training.local_steps,
            s.training.batch_size,
            self.learner.model_bytes,
            battery.joules_per_sample if battery else 0.0,
            battery.joules_per_byte if battery else 0.0,
        )
        self.class_columns = [f"accuracy_class_{c}" for c in range(num_classes)] if s.eval.per_class else []
        offsets = resume["offsets"] if resume else None
        timeline = timeline_sample(self.clients.speeds())  # read without building every client
        self.eligibility_reasons = eligibility_reasons(s)
        extra_metrics = self.class_columns + (["utc_time"] if self.start is not None else [])
        extra_rounds = list(ROUND_TIME_COLUMNS) + [f"failed_{r}" for r in self.eligibility_reasons]
        self.out = RunDirectory(
            run_dir, s.output.events, s.output.event_sample, extra_metrics, offsets, timeline, extra_rounds
        )
        self.round_spans: list[tuple[float, float, int]] = []  # (start, close, round) for offline_periods.csv
        self.progress = Progress()
        self.bar = None
        self.last_checkpoint = (0, 0.0)  # (version, virtual time) of the latest checkpoint

    def _build_learner(self, s: Scenario) -> Learner:
        with torch.random.fork_rng(devices=[]):  # model init must not touch the global generator
            torch.manual_seed(int(stream(s.seed, "model_init").integers(2**62)))
            self.model = build_model(
                s.model.name, self.federation.input_shape, self.federation.num_classes, s.model.hidden, s.model.layers
            )
        self.model.to(self.device)
        initial = torch.nn.utils.parameters_to_vector(self.model.parameters()).detach()
        strategy = make_strategy(s.algorithm, s.data.clients, initial)
        trainer = make_trainer(self.model, self.federation, s.training, s.seed, s.trainer, self.device)
        self.threads = training_threads(self.model, self.device, s.trainer)
        max_staleness = s.server.max_staleness if s.server.mode == "k_async" else None
        return Learner(self.model, self.federation, strategy, trainer, s.training, max_staleness)

    def run(self) -> Progress:
        """Play the scenario to its end with ``trainer.threads`` torch threads; the caller's setting is restored."""
        previous = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            return self._play()
        finally:
            torch.set_num_threads(previous)

    def _play(self) -> Progress:
        s = self.scenario
        env = simpy.Environment()
        limit = s.stop.virtual_time_s if s.stop.virtual_time_s is not None else math.inf
        total = s.stop.rounds
        self.bar = tqdm(total=total, disable=self.quiet, unit="round", dynamic_ncols=True)
        if self.resume is None:
            self._record_metrics(0.0, 0, None)
            self._checkpoint(0, 0.0, stop=False)
        elif self.resume["aggregations"] == 0:  # killed before the first aggregation: nothing to replay
            self._replay_round()
        context = ServerContext(
            env, self.clients, self.work, s.server, s.seed, self._submit, self._close_round, self._log, limit,
            logs_client=self.out.logs_client,
        )  # fmt: skip
        process = env.process(SERVER_MODES[s.server.mode].process(context))
        try:
            with collections_per_aggregation():
                env.run(until=process)
            if self.progress.status == "running":
                self.progress.status = "finished"
        except KeyboardInterrupt:
            self.progress.status = "interrupted"  # summary and figures for what has run, then re-raise
            raise RunInterrupted(self.out.path) from None
        finally:
            self.bar.close()
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
            return self._replay_round()
        updates = self.learner.collect_updates(info)  # training: Ctrl-C may land here at any moment
        with interrupts_deferred():  # the round's state and its rows are written all or not at all
            return self._commit_round(info, updates)

    def _commit_round(self, info: RoundInfo, updates: list) -> bool:
        s = self.scenario
        report = self.learner.apply(info, updates, s.algorithm.record_weights)
        self.progress.rounds = report.version
        self.progress.staleness.extend(report.staleness)
        self.out.event(info.time, None, "aggregate", report.version, None)
        self.out.rounds.write(_rounds_row(info, report, self.eligibility_reasons))
        self.out.aggregated(report.version, [u.client for u in updates], report.staleness)
        self.out.weight_rows(report.weight_rows)
        nonfinite_loss = bool(report.staleness) and not math.isfinite(report.train_loss)
        if self.learner.diverged() or (nonfinite_loss and not s.timing_only):
            self.progress.status = "diverged"
        due = report.version % s.eval.every_rounds == 0 or self._will_stop(report.version, info.time)
        self._record_metrics(info.time, report.version, report, evaluate=due or self.progress.status == "diverged")
        stop = self.progress.status != "running" or self._will_stop(report.version, info.time)
        if stop or self._checkpoint_due(report.version, info.time):
            self._checkpoint(report.version, info.time, stop)
        else:
            self.out.flush()
        return stop

    def _checkpoint_due(self, version: int, now: float) -> bool:
        every = self.scenario.checkpoint
        last_version, last_time = self.last_checkpoint
        by_rounds = every.every_rounds is not None and version - last_version >= every.every_rounds
        by_time = every.every_virtual_s is not None and now - last_time >= every.every_virtual_s
        return by_rounds or by_time

    def _checkpoint(self, version: int, now: float, stop: bool) -> None:
        from asyncfl.checkpoint import save_checkpoint

        self.out.flush()
        self.last_checkpoint = (version, now)
        if self.scenario.checkpoint.every_rounds is None and self.scenario.checkpoint.every_virtual_s is None:
            return
        save_checkpoint(self.out.path, {
            "aggregations": version,
            "time": now,
            "stop": stop,
            "learner": self.learner.state(),
            "progress": self.progress,
            "offsets": self.out.offsets(),
            "elapsed_s": time.perf_counter() - self.started,
        })  # fmt: skip

    def _replay_round(self) -> bool:
        """Resuming: the clock world is replayed from t = 0 (it never depends on what is learned); at
        the checkpoint's aggregation the learning state is swapped in and the run goes on live."""
        checkpoint = self.resume
        self.replayed += 1 if checkpoint["aggregations"] else 0
        if self.replayed < checkpoint["aggregations"]:
            return False
        self.learner.restore(checkpoint["learner"])
        self.progress = checkpoint["progress"]
        self.started = time.perf_counter() - checkpoint["elapsed_s"]
        self.last_checkpoint = (checkpoint["aggregations"], checkpoint["time"])
        if self.bar is not None:
            self.bar.update(checkpoint["aggregations"])
        self.resume = None
        return checkpoint["stop"]

    def _will_stop(self, version: int, now: float) -> bool:
        stop = self.scenario.stop
        if stop.rounds is not None and version >= stop.rounds:
            return True
        if stop.virtual_time_s is not None and now >= stop.virtual_time_s:
            return True
        if stop.target_accuracy is not None and stop.at_target and self.progress.target_time is not None:
            self.progress.status = "target_reached"
            return True
        return False

    def _record_metrics(
        self, now: float, version: int, report: AggregationReport | None, evaluate: bool = True
    ) -> None:
        accuracy = loss = math.nan
        per_class = [math.nan] * len(self.class_columns)
        if evaluate and not self.scenario.timing_only:
            accuracy, loss, per_class = self.learner.test_metrics()
            self._note_accuracy(accuracy, now, version)
        staleness = report.staleness if report else []
        self.out.metrics.write({
            "time": now,
            "round": version,
            "test_accuracy": accuracy,
            "test_loss": loss,
            "train_loss": report.train_loss if report else math.nan,
            "updates": len(staleness),
            "staleness_mean": statistics.fmean(staleness) if staleness else math.nan,
            "wall_seconds": time.perf_counter() - self.started,
            **dict(zip(self.class_columns, per_class)),
            **({"utc_time": utc_time(self.start, now)} if self.start is not None else {}),
        })  # fmt: skip
        if self.bar is not None and report is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(f"t={now:,.0f}s acc={self.progress.last_accuracy:.3f}", refresh=False)

    def _note_accuracy(self, accuracy: float, now: float, version: int) -> None:
        p = self.progress
        p.last_accuracy = accuracy
        if not math.isnan(accuracy) and not accuracy <= p.best_accuracy:
            p.best_accuracy = accuracy
        target = self.scenario.stop.target_accuracy
        if target is not None and p.target_time is None and accuracy >= target:
            p.target_time, p.target_round = now, version

    def finish(self, now: float) -> None:
        """Write clients.csv, offline_periods.csv, summary.json and the figures for whatever has run.
        A run that ended (not interrupted) drops its checkpoint: ``--resume`` refuses ended runs, and
        a strategy's memory (MIFA: one update per client) can make it the largest file by far."""
        s, p = self.scenario, self.progress
        accuracies = self.learner.client_accuracies() if s.eval.per_client and p.status != "diverged" else []
        columns = _client_columns(self.clients, self.probabilities, accuracies, s.timing_only)
        columns.update(time_breakdown_columns(self.clients, now, self.round_spans, self._always_online()))
        for reason in self.eligibility_reasons:
            counts = columns.setdefault(f"failed_{reason}", [0] * len(self.clients))
            for c in self.clients.built():
                counts[c.id] = c.stats.failures[reason]
        if s.population.timezones is not None:
            columns["utc_offset_h"] = utc_offsets(s.population.timezones, s.data.clients, s.seed)
        self.out.write_columns("clients.csv", columns)
        for name, rows in getattr(self.learner.strategy, "extra_outputs", dict)().items():
            self.out.write_table(name, rows)
        self.out.end_open_tasks(now)
        self.out.close()
        models = {c: self.clients[c].availability for c in sorted(self.out.timeline)}
        self.out.write_offline_periods(models, now, self.round_spans)
        summary = {**self.summary(now), "timeline_clients": sorted(self.out.timeline)}
        self.out.write_json("summary.json", summary)
        if s.output.plot:
            from asyncfl.study.straggler import render_run_figures

            started = time.perf_counter()
            render_run_figures(self.out.path)
            self.out.write_json("summary.json", {**summary, "figures_seconds": time.perf_counter() - started})
        if p.status in FINAL:
            (self.out.path / CHECKPOINT_FILE).unlink(missing_ok=True)

    def _always_online(self) -> bool:
        population = self.scenario.population
        return population.availability.kind == "always" and population.eligibility is None

    def summary(self, now: float) -> dict:
        p, s = self.progress, self.scenario
        return {
            "status": p.status,
            "diverged_round": p.rounds if p.status == "diverged" else None,
            "scenario": s.name,
            "algorithm": s.algorithm.name,
            "seed": s.seed,
            "device": str(self.device),
            "final_accuracy": _json_float(p.last_accuracy),
            "best_accuracy": _json_float(p.best_accuracy),
            "virtual_time_s": now,
            "rounds": p.rounds,
            "updates": len(p.staleness),
            "staleness_mean": statistics.fmean(p.staleness) if p.staleness else None,
            "target_accuracy": s.stop.target_accuracy,
            "time_to_target_s": p.target_time,
            "rounds_to_target": p.target_round,
            "training_jobs_computed": self.learner.jobs.computed,
            "timing_only": s.timing_only,
            "trainer": type(self.learner.jobs.trainer).__name__ if self.learner.jobs.trainer else None,
            "real_seconds": time.perf_counter() - self.started,
            "versions": _versions(),
        }


# (input shape, classes) of each data set, for timing_only runs that never load the data
TIMING_INPUTS = {
    "digits": ((1, 8, 8), 10),
    "mnist1d": ((1, 40), 10),
    "mnist": ((1, 28, 28), 10),
    "fashion_mnist": ((1, 28, 28), 10),
    "cifar10": ((3, 32, 32), 10),
    "svhn": ((3, 32, 32), 10),
}


def timing_input(s: Scenario) -> tuple[tuple[int, ...], int]:
    if s.data.dataset == "synthetic":
        return (s.data.synthetic.dimension,), s.data.synthetic.classes
    return TIMING_INPUTS[s.data.dataset]


def timing_model_bytes(s: Scenario) -> int:
    """Bytes of the float32 model a full run would train: its real parameter count x 4."""
    shape, classes = timing_input(s)
    model = build_model(s.model.name, shape, classes, s.model.hidden, s.model.layers)
    return parameter_count(model) * 4


class TimingLearner:
    """Stands in for :class:`asyncfl.learner.Learner` when ``timing_only``: the servers, clients and
    event log run exactly as in a full run, but no data set is loaded and nothing is trained.  Every
    client is taken to hold at least ``batch_size`` samples (full batches), so its tasks last as long
    as in a full run whose clients all have that many."""

    def __init__(self, model_bytes: int) -> None:
        self.model_bytes, self.version = model_bytes, 0
        self.jobs = JobBook(None)  # never receives a job: ``computed`` stays 0
        self.strategy, self.participation = None, None

    def submit(self, plan) -> None:
        pass

    def state(self) -> dict:
        return {"version": self.version}

    def restore(self, state: dict) -> None:
        self.version = state["version"]

    def collect_updates(self, info: RoundInfo) -> list:
        return list(info.received)

    def apply(self, info: RoundInfo, updates: list, record_weights: bool) -> AggregationReport:
        self.version += 1
        return AggregationReport(self.version, math.nan, [info.round - p.round for p in updates])

    def diverged(self) -> bool:
        return False

    def client_accuracies(self) -> list[float]:
        return []


ROUND_TIME_COLUMNS = ("wait_slowest_s", "slowest_task_s", "lost_s", "lost_compute_s")
TIME_BREAKDOWN = ("download_s", "compute_s", "upload_s", "idle_s", "offline_s")


def eligibility_reasons(s: Scenario) -> list[str]:
    """The failure reasons ``population.eligibility`` adds (their failed_* columns exist only then)."""
    return s.population.eligibility.reasons() if s.population.eligibility is not None else []


def utc_time(start, now: float) -> str:
    """``clock.start_time`` + ``now`` virtual seconds, as ISO UTC to the second."""
    from datetime import timedelta

    return (start + timedelta(seconds=now)).strftime("%Y-%m-%dT%H:%M:%S")


def time_breakdown_columns(clients, now: float, rounds: list, always_online: bool = False) -> dict[str, list]:
    """clients.csv's where-the-time-went columns: seconds downloading, computing, uploading, idle and
    offline in [0, now].  Phases are those of every task planned (a failed one up to its cut, one
    still running trimmed at ``now``); offline is the time the client could not take work (not
    available, or with ``population.eligibility`` not eligible) while not busy; idle is the rest
    (online, no task, including time waiting to be selected or for a battery to charge), so the
    five add up to ``now`` for every client.  A client never built never acted: no phases, and its
    offline time is read from its availability model alone."""
    n = len(clients)
    download, compute, upload = [0.0] * n, [0.0] * n, [0.0] * n
    offline = [0.0] * n
    meter = None if always_online else OfflineMeter(now, rounds)
    built = [False] * n
    for c in clients.built():
        i, stats = c.id, c.stats
        built[i] = True
        d, cp, u = stats.download_s, stats.compute_s, stats.upload_s
        plan = stats.last_plan
        if plan is not None and plan.end > now:  # still running: count it up to now only
            full, cut = phase_seconds(plan), phase_seconds(plan, now)
            d, cp, u = d - full[0] + cut[0], cp - full[1] + cut[1], u - full[2] + cut[2]
        download[i], compute[i], upload[i] = d, cp, u
        if meter is not None:
            offline[i] = meter(c.availability, stats.late_spans)
    if meter is not None:
        for i in range(n):
            if not built[i]:
                offline[i] = meter(clients.availability_of(i))
    idle = [now - d - cp - u - o for d, cp, u, o in zip(download, compute, upload, offline)]
    return dict(zip(TIME_BREAKDOWN, (download, compute, upload, idle, offline)))


def _rounds_row(info: RoundInfo, report: AggregationReport, reasons: list[str] = ()) -> dict:
    staleness = report.staleness
    arrivals = [p.end for p in info.received]
    return {
        "time": info.time,
        "round": report.version,
        "started": info.started,
        "selected": len(info.selected),
        "received": len(info.received),
        "late": info.late,
        "failed_offline": info.failures["offline"],
        "failed_battery": info.failures["battery"],
        "failed_deadline": info.failures["deadline"],
        "dropped_stale": info.dropped_stale,
        "staleness_mean": statistics.fmean(staleness) if staleness else math.nan,
        "staleness_max": max(staleness) if staleness else math.nan,
        "wait_slowest_s": max(arrivals) - info.started if arrivals else math.nan,
        "slowest_task_s": max(p.end - p.start for p in info.received) if arrivals else math.nan,
        "lost_s": info.lost_s,
        "lost_compute_s": info.lost_compute_s,
        **{f"failed_{r}": info.failures[r] for r in reasons},
    }


CLIENT_COLUMNS = (
    "client", "samples_per_s", "uplink_mbps", "downlink_mbps", "latency_s", "availability_p", "train_samples",
    "attempts", "participations", "failed_offline", "failed_battery", "failed_deadline", "busy_s", "energy_j",
    "battery_level_j", "accuracy",
)  # fmt: skip


def _client_columns(clients, probabilities: list[float], accuracies: list[float], timing_only: bool) -> dict:
    """clients.csv as columns, one value per client in id order.  A client that never acted was never
    built (:class:`asyncfl.sim.population.Clients`): its columns are read from the drawn profiles and
    batteries, its counters are zero.  At 10^6 clients one dict per row cost seconds."""
    n = len(clients)
    speed, up, down, latency = clients.profile_columns()
    batteries = clients.batteries()
    columns = {
        "client": list(range(n)),
        "samples_per_s": list(speed),
        "uplink_mbps": [b * 8 / 1e6 for b in up],
        "downlink_mbps": [b * 8 / 1e6 for b in down],
        "latency_s": list(latency),
        "availability_p": list(probabilities),
        "train_samples": [ClientDevice.train_samples] * n,
        "attempts": [0] * n,
        "participations": [0] * n,
        "failed_offline": [0] * n,
        "failed_battery": [0] * n,
        "failed_deadline": [0] * n,
        "busy_s": [0.0] * n,
        "energy_j": [b.used_j if b else 0.0 for b in batteries],
        "battery_level_j": [b.level if b else math.nan for b in batteries],
        "accuracy": list(accuracies) if accuracies else [math.nan] * n,
    }
    for client in clients.built():
        i, stats = client.id, client.stats
        columns["train_samples"][i] = client.train_samples
        columns["attempts"][i] = stats.attempts
        columns["participations"][i] = stats.delivered
        for reason in ("offline", "battery", "deadline"):
            columns[f"failed_{reason}"][i] = stats.failures[reason]
        columns["busy_s"][i] = stats.busy_s
    if timing_only:  # no data set: clients hold no samples (their tasks use full batches)
        columns["train_samples"] = [math.nan] * n
    assert tuple(columns) == CLIENT_COLUMNS
    return columns


def _json_float(x: float) -> float | None:
    return None if math.isnan(x) else x


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("asyncfl", "torch", "simpy", "numpy", "pydantic"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def run_scenario(scenario: Scenario, out_dir: str | Path | None = None, quiet: bool = True) -> Path:
    """Run ``scenario`` and return its run directory (``output.dir/<name>/<timestamp>`` by default).

    A run that fails before it starts (a data set or trace file that cannot be read, Ctrl-C while
    loading) leaves nothing behind: what this call wrote and the directories it made are removed."""
    out_dir = Path(out_dir) if out_dir is not None else None
    parent = out_dir if out_dir is not None else scenario.output.dir / scenario.name
    made = [p for p in (parent, *parent.parents) if not p.exists()]  # deepest first
    # a directory that already holds files (a run restarted by --resume) is never cleared
    clear = out_dir is None or not out_dir.exists() or not any(out_dir.iterdir())
    run_dir = out_dir if out_dir is not None else new_run_dir(scenario.output.dir, scenario.name)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        write_atomic(run_dir / "config.yaml", yaml.safe_dump(scenario.model_dump(mode="json"), sort_keys=False))
        simulation = Simulation(scenario, run_dir, quiet)
    except BaseException:
        if clear:
            _remove_unstarted(run_dir, ([run_dir] if out_dir is None else []) + made)
        raise
    simulation.run()
    return run_dir


def _remove_unstarted(run_dir: Path, made: list[Path]) -> None:
    """Empty ``run_dir`` (nothing was recorded in it yet), then remove the directories made for it."""
    import shutil

    for child in run_dir.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    for folder in made:
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def resume_run(run_dir: Path, quiet: bool = True) -> Path:
    """Continue a run that was killed (at any moment) from its last checkpoint; see asyncfl.checkpoint."""
    from asyncfl.checkpoint import load_for_resume

    scenario, checkpoint = load_for_resume(run_dir)
    if checkpoint is None:  # died before its first checkpoint: start it again in place
        return run_scenario(scenario, run_dir, quiet)
    Simulation(scenario, run_dir, quiet, resume=checkpoint).run()
    return run_dir
