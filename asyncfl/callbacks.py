"""What a run does around each aggregation, as small callbacks that the run loop calls in order.

The run loop (:class:`asyncfl.runner.Simulation`) only plays the clock world, has the learner
aggregate what each round received, and hands the same :class:`Aggregation` to every callback:

==================  ======================================================================
``RoundLog``        events.jsonl's ``aggregate`` line, rounds.csv, updates.csv, weights.csv
``MetricsRecorder`` metrics.csv: evaluates the global model when due (``eval.every_rounds``,
                    the last aggregation, divergence); best / last accuracy, time to target
``StopRules``       ``stop.rounds``, ``stop.virtual_time_s``, ``stop.target_accuracy``, divergence
``Checkpointer``    ``checkpoint.every_rounds`` / ``every_virtual_s``, and when the run stops
``ProgressBar``     the tqdm bar
==================  ======================================================================

(``asyncfl.run_summary.SummaryWriter`` writes the end-of-run files in ``on_end``.)

Hooks: ``on_start`` (a fresh run, before the clock starts), ``on_aggregation``, ``on_resume`` (a
resumed run, once the checkpoint's learning state is back: until then every callback is muted, see
``Simulation``) and ``on_end``.  Nothing here imports torch: evaluating, saving a checkpoint and the
learner's state come in as plain callables, so every callback is tested with fakes
(tests/test_callbacks.py).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

ROUND_TIME_COLUMNS = ("wait_slowest_s", "slowest_task_s", "lost_s", "lost_compute_s")


@dataclass
class AggregationReport:
    """What the learner's aggregation did, for metrics.csv / rounds.csv / weights.csv."""

    version: int
    train_loss: float
    staleness: list[int]
    weight_rows: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Aggregation:
    """One aggregation as every callback sees it: the server's round (``info``: a
    :class:`asyncfl.sim.servers.RoundInfo`), what the learner made of it, the clients whose updates
    went in, and whether the model has diverged (non-finite parameters, or a non-finite training
    loss in a run that trains)."""

    info: Any
    report: AggregationReport
    clients: list[int]
    diverged: bool = False

    @property
    def time(self) -> float:
        return self.info.time

    @property
    def version(self) -> int:
        return self.report.version


@dataclass
class Progress:
    """Best/target bookkeeping for summary.json (saved whole in every checkpoint)."""

    best_accuracy: float = math.nan
    last_accuracy: float = math.nan
    target_time: float | None = None
    target_round: int | None = None
    status: str = "running"
    rounds: int = 0
    staleness: list[int] = field(default_factory=list)

    def count(self, report: AggregationReport) -> None:
        self.rounds = report.version
        self.staleness.extend(report.staleness)

    def note_accuracy(self, accuracy: float, now: float, version: int, target: float | None) -> None:
        self.last_accuracy = accuracy
        if not math.isnan(accuracy) and not accuracy <= self.best_accuracy:
            self.best_accuracy = accuracy
        if target is not None and self.target_time is None and accuracy >= target:
            self.target_time, self.target_round = now, version


@dataclass
class RunState:
    """What the callbacks share: the progress record, the wall-clock start (moved back on resume by
    the time the run had already taken) and whether the latest aggregation ends the run."""

    progress: Progress = field(default_factory=Progress)
    started: float = field(default_factory=time.perf_counter)
    stop: bool = False

    def wall_seconds(self) -> float:
        return time.perf_counter() - self.started


class Callback:
    """The four hooks of the run loop; a callback overrides the ones it needs (the others do nothing)."""

    def on_start(self, state: RunState) -> None:
        """A fresh run, before the clock starts (a resumed run never hears it)."""

    def on_aggregation(self, state: RunState, aggregation: Aggregation) -> None:
        """After every live aggregation (not while a resumed run replays up to its checkpoint)."""

    def on_resume(self, state: RunState, checkpoint: dict) -> None:
        """A resumed run, once the checkpoint's learning state is back in place."""

    def on_end(self, state: RunState, now: float) -> None:
        """The run ended (finished, stopped, diverged or interrupted) at virtual time ``now``."""


def rounds_row(info: Any, report: AggregationReport, reasons: Sequence[str] = ()) -> dict:
    """One line of rounds.csv."""
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


class RoundLog(Callback):
    """The aggregation's own records: the ``aggregate`` event, its rounds.csv line, which updates
    went into which version (updates.csv) and, with ``algorithm.record_weights``, weights.csv.
    ``reasons`` are the extra failure reasons of ``population.eligibility`` (failed_* columns)."""

    def __init__(self, out: Any, reasons: Sequence[str] = ()) -> None:
        self.out, self.reasons = out, list(reasons)

    def on_aggregation(self, state: RunState, aggregation: Aggregation) -> None:
        info, report = aggregation.info, aggregation.report
        self.out.event(info.time, None, "aggregate", report.version, None)
        self.out.rounds.write(rounds_row(info, report, self.reasons))
        self.out.aggregated(report.version, aggregation.clients, report.staleness)
        self.out.weight_rows(report.weight_rows)


class StopRules(Callback):
    """Whether the latest aggregation ends the run, checked in this order: divergence, ``stop.rounds``,
    ``stop.virtual_time_s``, then ``stop.target_accuracy`` (with ``at_target``).  It sets the status
    of ``diverged`` and ``target_reached`` runs; a run that hits a limit ends ``finished``."""

    def __init__(self, stop: Any) -> None:
        self.stop = stop

    def limit_reached(self, version: int, now: float) -> bool:
        """``stop.rounds`` or ``stop.virtual_time_s`` is reached: this is the run's last aggregation."""
        rounds, virtual_time = self.stop.rounds, self.stop.virtual_time_s
        return (rounds is not None and version >= rounds) or (virtual_time is not None and now >= virtual_time)

    def on_aggregation(self, state: RunState, aggregation: Aggregation) -> None:
        progress = state.progress
        if aggregation.diverged:
            progress.status = "diverged"
        if progress.status != "running" or self.limit_reached(aggregation.version, aggregation.time):
            state.stop = True
        elif self.stop.target_accuracy is not None and self.stop.at_target and progress.target_time is not None:
            progress.status = "target_reached"
            state.stop = True


class MetricsRecorder(Callback):
    """metrics.csv: one line at the start and one per aggregation.  The global model is evaluated
    (``evaluate() -> (accuracy, loss, accuracy per class)``; None: a timing-only run, never) every
    ``eval.every_rounds`` aggregations, at the last one and when the model has diverged; other lines
    get NaN.  ``extra(now)`` adds columns (e.g. ``utc_time``)."""

    def __init__(
        self,
        out: Any,
        evaluate: Callable[[], tuple[float, float, list[float]]] | None,
        every_rounds: int,
        stop_rules: StopRules,
        class_columns: Sequence[str] = (),
        extra: Callable[[float], dict] | None = None,
    ) -> None:
        self.out, self.evaluate, self.every = out, evaluate, every_rounds
        self.stop_rules, self.class_columns, self.extra = stop_rules, list(class_columns), extra
        self.target = stop_rules.stop.target_accuracy

    def on_start(self, state: RunState) -> None:
        self.write(state, 0.0, 0, None, evaluate=True)

    def on_aggregation(self, state: RunState, aggregation: Aggregation) -> None:
        version, now = aggregation.version, aggregation.time
        due = version % self.every == 0 or self.stop_rules.limit_reached(version, now)
        self.write(state, now, version, aggregation.report, evaluate=due or aggregation.diverged)

    def write(self, state: RunState, now: float, version: int, report: AggregationReport | None, evaluate: bool):
        accuracy = loss = math.nan
        per_class = [math.nan] * len(self.class_columns)
        if evaluate and self.evaluate is not None:
            accuracy, loss, per_class = self.evaluate()
            state.progress.note_accuracy(accuracy, now, version, self.target)
        staleness = report.staleness if report else []
        self.out.metrics.write({
            "time": now,
            "round": version,
            "test_accuracy": accuracy,
            "test_loss": loss,
            "train_loss": report.train_loss if report else math.nan,
            "updates": len(staleness),
            "staleness_mean": statistics.fmean(staleness) if staleness else math.nan,
            "wall_seconds": state.wall_seconds(),
            **dict(zip(self.class_columns, per_class)),
            **(self.extra(now) if self.extra is not None else {}),
        })  # fmt: skip


class Checkpointer(Callback):
    """Saves what ``--resume`` needs (``asyncfl.checkpoint``) at the start, every
    ``checkpoint.every_rounds`` aggregations or ``every_virtual_s`` virtual seconds, and at the
    aggregation that stops the run; with neither set, never (the files are still flushed).  Between
    checkpoints the run files are flushed after every aggregation.  ``save(state)`` writes the
    checkpoint; ``learner_state()`` is the learning world's part of it."""

    def __init__(self, out: Any, every: Any, save: Callable[[dict], None], learner_state: Callable[[], dict]) -> None:
        self.out, self.every, self.save, self.learner_state = out, every, save, learner_state
        self.enabled = every.every_rounds is not None or every.every_virtual_s is not None
        self.last = (0, 0.0)  # (version, virtual time) of the latest checkpoint

    def due(self, version: int, now: float) -> bool:
        last_version, last_time = self.last
        by_rounds = self.every.every_rounds is not None and version - last_version >= self.every.every_rounds
        by_time = self.every.every_virtual_s is not None and now - last_time >= self.every.every_virtual_s
        return by_rounds or by_time

    def on_start(self, state: RunState) -> None:
        self.checkpoint(state, 0, 0.0)

    def on_aggregation(self, state: RunState, aggregation: Aggregation) -> None:
        version, now = aggregation.version, aggregation.time
        if state.stop or self.due(version, now):
            self.checkpoint(state, version, now)
        else:
            self.out.flush()

    def on_resume(self, state: RunState, checkpoint: dict) -> None:
        self.last = (checkpoint["aggregations"], checkpoint["time"])

    def checkpoint(self, state: RunState, version: int, now: float) -> None:
        self.out.flush()
        self.last = (version, now)
        if not self.enabled:
            return
        self.save({
            "aggregations": version,
            "time": now,
            "stop": state.stop,
            "learner": self.learner_state(),
            "progress": asdict(state.progress),
            "offsets": self.out.offsets(),
            "elapsed_s": state.wall_seconds(),
        })  # fmt: skip


class ProgressBar(Callback):
    """tqdm's bar over ``stop.rounds`` aggregations (unbounded without it), showing virtual time and
    the latest accuracy; ``quiet`` hides it."""

    def __init__(self, total: int | None, quiet: bool) -> None:
        self.total, self.quiet, self.bar = total, quiet, None

    def _open(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, disable=self.quiet, unit="round", dynamic_ncols=True)

    def on_start(self, state: RunState) -> None:
        self._open()

    def on_resume(self, state: RunState, checkpoint: dict) -> None:
        self._open()
        self.bar.update(checkpoint["aggregations"])

    def on_aggregation(self, state: RunState, aggregation: Aggregation) -> None:
        self.bar.update(1)
        self.bar.set_postfix_str(
            f"t={aggregation.time:,.0f}s acc={state.progress.last_accuracy:.3f}", refresh=False
        )  # fmt: skip

    def on_end(self, state: RunState, now: float) -> None:
        if self.bar is not None:
            self.bar.close()
