"""What a run is made of, assembled from a validated scenario before the clock starts: the learning side,
the population, the work a task asks of a client, the run directory and the callbacks
(:func:`assemble`, read top to bottom)."""

from __future__ import annotations

import contextlib
import functools
import platform
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np
import torch

from asyncfl.algorithms import make_strategy
from asyncfl.config.clock import start_datetime
from asyncfl.config.schema import Scenario
from asyncfl.errors import ConfigError
from asyncfl.learn.compression import upload_bytes
from asyncfl.learn.datasets import dataset_spec
from asyncfl.learn.executors import auto_executor, make_trainer, training_threads
from asyncfl.learn.federation import build_federation, client_train_sizes
from asyncfl.learn.models import build_model_of, parameter_count
from asyncfl.learn.partition import cluster_of_clients
from asyncfl.learn.training import Trainer
from asyncfl.learn.workers import BATCHED_JOBS_PER_CALL, WorkerPool, WorkerSettings
from asyncfl.output.columns import class_accuracy_columns, metrics_extra_columns, rounds_extra_columns
from asyncfl.output.run_directory import RunDirectory, speed_bins, speed_order, timeline_sample
from asyncfl.runner.callbacks.base import Callback
from asyncfl.runner.callbacks.checkpointer import Checkpointer
from asyncfl.runner.callbacks.end_of_run import end_of_run
from asyncfl.runner.callbacks.metrics import MetricsRecorder
from asyncfl.runner.callbacks.progress_bar import ProgressBar
from asyncfl.runner.callbacks.round_log import RoundLog
from asyncfl.runner.callbacks.stop_rules import StopRules
from asyncfl.runner.checkpoint import CheckpointWriter
from asyncfl.runner.learning import Learner, LearningWorld
from asyncfl.runner.selection_feedback import FeedbackRecorder
from asyncfl.runner.timing_learning import TimingLearner
from asyncfl.seeding import stream
from asyncfl.sim.clients import Work, check_time_budget
from asyncfl.sim.population import build_clients, participation_probabilities


@dataclass
class RunParts:
    """Everything :class:`asyncfl.runner.simulation.Simulation` runs with.  ``round_spans``: (start, close, base
    version) of every aggregation, filled in by the loop (round-indexed availability reads them at the end)."""

    scenario: Scenario
    device: torch.device
    federation: Any  # None when timing_only: no data set
    learner: LearningWorld
    threads: int | None  # torch CPU threads while running (trainer.threads); None: leave them
    clients: Any  # asyncfl.sim.population.Clients
    probabilities: list[float]
    work: Work
    out: RunDirectory
    selection_feedback: FeedbackRecorder
    num_classes: int
    start: datetime | None  # clock.start_time
    reasons: list[str]  # failure reasons beyond the built-in ones (added_failure_reasons)
    round_spans: list[tuple[float, float, int]] = field(default_factory=list)


class OutsideLearning(Protocol):
    """Builds the learning side of a run whose local training is done outside asyncfl (a Flower ClientApp:
    :mod:`asyncfl.flower.k_async`): a :class:`LearningWorld` with a ``perform`` method, which does a task's
    work when the task starts and tells the timing world what it was (``Work.perform``)."""

    def __call__(self, scenario: Scenario, device: torch.device) -> LearningWorld: ...


def assemble(
    scenario: Scenario, run_dir: Path, offsets: dict | None = None, learning: OutsideLearning | None = None
) -> RunParts:
    """Build a run's parts; ``offsets``: a checkpoint's (resuming: the logs go on where it left them);
    ``learning``: a learning side from outside asyncfl (None: asyncfl trains on ``data``)."""
    s = scenario
    device = resolve_device(s.device)
    if s.timing_only:  # no data, no model: see TimingLearner
        federation, learner, threads, histograms = None, TimingLearner(timing_model_bytes(s)), None, None
        num_classes = dataset_spec(s.data)[1]
        samples = client_train_sizes(s.data, s.seed)  # as a training run deals them, where that is cheap
    elif learning is not None:  # the trainer holds the data: no data set here, and no sample counts
        federation, learner, threads, histograms, samples = None, learning(s, device), None, None, None
        num_classes = dataset_spec(s.data)[1]
    else:
        federation = build_federation(s.data, s.seed, device)
        learner, threads = build_learner(s, federation, device)
        histograms = np.stack([federation.label_histogram(c) for c in range(s.data.clients)])
        num_classes = federation.num_classes
        samples = [len(idx) for idx in federation.client_train]
    start = start_datetime(s.clock.start_time) if s.clock.start_time else None
    clients = build_clients(s.population, s.data.clients, s.seed, histograms, clusters_of(s), seconds_of_day(start))
    probabilities = participation_probabilities(s.population.availability, s.data.clients, s.seed, histograms)
    learner.participation = tuple(probabilities)
    for client, size in zip(clients, samples or []):  # None: every client does full batches
        client.train_samples = size
    work = task_work(s, learner.model_bytes)
    if learning is not None:
        work = replace(work, perform=learner.perform)
    check_time_budget(work.time_budget_s, work.batch_size, clients.speeds(), samples)
    reasons = added_failure_reasons(s) + (["client_app"] if learning is not None else [])  # its trainer may fail
    out = run_directory(s, run_dir, clients, offsets, num_classes, start, reasons)
    feedback = FeedbackRecorder(s, learner, samples)  # what server.selection reads
    return RunParts(
        s,
        device,
        federation,
        learner,
        threads,
        clients,
        probabilities,
        work,
        out,
        feedback,
        num_classes,
        start,
        reasons,
    )


def live_callbacks(parts: RunParts, quiet: bool, learning_state: Callable[[], dict]) -> list[Callback]:
    """What the run does at each aggregation and at its end, in this order (see :mod:`asyncfl.runner.callbacks`);
    ``learning_state()``: the learning side's part of a checkpoint."""
    s, out = parts.scenario, parts.out
    stop_rules = StopRules(s.stop)
    evaluate = None if s.timing_only else parts.learner.test_metrics
    start = parts.start
    clock = (lambda now: {"utc_time": utc_time(start, now)}) if start is not None else None
    class_columns = class_accuracy_columns(parts.num_classes) if s.eval.per_class else []
    return [
        RoundLog(out, parts.reasons),
        MetricsRecorder(out, evaluate, s.eval.every_rounds, stop_rules, class_columns, clock),
        stop_rules,
        Checkpointer(out, s.checkpoint, CheckpointWriter(out.path), learning_state),
        ProgressBar(s.stop.rounds, quiet),
        *end_of_run(
            s,
            out,
            parts.clients,
            parts.probabilities,
            parts.learner,
            parts.device,
            parts.round_spans,
            parts.reasons,
            machine=machine_description(),
        ),  # fmt: skip
    ]


def initial_model(s: Scenario, federation: Any) -> torch.nn.Module:
    """The scenario's model with its initial weights, drawn from the seed's ``model_init`` stream (on the CPU;
    a trainer outside asyncfl, such as a test's Flower ClientApp, starts from the same weights)."""
    with torch.random.fork_rng(devices=[]):  # model init must not touch the global generator
        torch.manual_seed(int(stream(s.seed, "model_init").integers(2**62)))
        return build_model_of(s.model, federation.input_shape, federation.num_classes)


def build_learner(s: Scenario, federation: Any, device: torch.device) -> tuple[Learner, int | None]:
    """The learning side of a run that trains, and the torch threads it trains with."""
    model = initial_model(s, federation)
    model.to(device)
    initial = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    strategy = make_strategy(s.algorithm, s.data.clients, initial)
    if s.trainer.workers is None:
        trainer = make_trainer(model, federation, s.training, s.seed, s.trainer, device)
    else:
        trainer = WorkerPool(functools.partial(worker_trainer, s), worker_settings(s.trainer, model, device), device)
    threads = training_threads(model, device, s.trainer)
    # a key of another server mode is always at its default (None here): the schema refuses it
    learner = Learner(model, federation, strategy, trainer, s.training, s.server.max_staleness, seed=s.seed)
    return learner, threads


def worker_trainer(s: Scenario) -> tuple[Any, torch.device]:
    """What a ``trainer.workers`` actor trains with: the run's data set and trainer, built on the worker's
    device (the model's weights do not matter: every job brings its base)."""
    device = resolve_device(s.device)
    federation = build_federation(s.data, s.seed, device)
    model = initial_model(s, federation).to(device)
    return make_trainer(model, federation, s.training, s.seed, s.trainer, device), device


def worker_settings(spec: Trainer, model: torch.nn.Module, device: torch.device) -> WorkerSettings:
    """``trainer``'s worker keys with their defaults resolved (docs/how-to/workers.md)."""
    executor = auto_executor(model, device, spec.precision) if spec.executor == "auto" else spec.executor
    jobs_per_call = spec.jobs_per_call or (1 if executor == "sequential" else BATCHED_JOBS_PER_CALL)
    gpus = spec.gpus_per_worker if spec.gpus_per_worker is not None else float(device.type == "cuda")
    return WorkerSettings(spec.workers, spec.ray_address, jobs_per_call, gpus, spec.threads or 1)


def run_directory(
    s: Scenario, run_dir: Path, clients: Any, offsets: dict | None, num_classes: int, start, reasons: list[str]
) -> RunDirectory:
    speeds = clients.speeds()  # read without building every client
    order = speed_order(speeds)
    class_count = num_classes if s.eval.per_class else 0
    return RunDirectory(
        run_dir,
        s.output.events,
        s.output.event_sample,
        metrics_extra_columns(class_count, start is not None),
        offsets,
        timeline_sample(speeds, order=order),
        rounds_extra_columns(reasons),
        format=s.output.format,
        speed_bins=speed_bins(order),
    )


def task_work(s: Scenario, model_bytes: int) -> Work:
    """What a task asks of a client: local steps (``training.local_work``), bytes, energy."""
    battery = s.population.battery
    return Work(
        s.training.local_steps,
        s.training.batch_size,
        model_bytes,
        battery.joules_per_sample if battery else 0.0,
        battery.joules_per_byte if battery else 0.0,
        upload_bytes=compressed_upload_bytes(s, model_bytes),
        **s.training.local_work.work_limits(),
    )


def clusters_of(s: Scenario) -> Any:
    part = s.data.partition
    return cluster_of_clients(s.data.clients, part.clusters) if part.kind == "clusters" else None


def seconds_of_day(start: datetime | None) -> float:
    """``clock.start_time``'s second of the day (0 without one)."""
    if start is None:
        return 0.0
    return start.hour * 3600 + start.minute * 60 + start.second + start.microsecond / 1e6


@functools.cache
def machine_description() -> dict[str, str]:
    """The processor a run computes on, for summary.json: the same scenario and seed give the same metrics on one
    machine, but another CPU may round differently (a FedAU tuning run's accuracy moved by up to 0.2, 20 points,
    between two machines), so a reader comparing runs needs to know whether they shared one."""
    cpu = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as info:  # Linux; else platform's
        cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    return {
        "cpu": cpu or platform.processor() or "unknown",
        "arch": platform.machine(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),  # the vector kernels torch dispatches to
    }


def resolve_device(choice: str) -> torch.device:
    if choice == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: cuda was asked for but no CUDA device is available here; allowed: auto, cpu, cuda.")
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


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


def utc_time(start: datetime, now: float) -> str:
    """``clock.start_time`` + ``now`` virtual seconds, as ISO UTC to the second."""
    return (start + timedelta(seconds=now)).strftime("%Y-%m-%dT%H:%M:%S")
