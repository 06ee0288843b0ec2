"""summary.json's content as a type (:class:`RunSummary`), and its one writer (:func:`write_summary`).

Every key a run's summary.json holds is a field here (docs/reference/run-files.md says what each means); the
optional ones (``format``, ``reason``, ``failed_stage``, ``error``, ``figures_seconds``, ``stopped_by``) are left
out of the file when None, so a normal run's summary.json is as it always was.  It is written from the object the
run holds, never read back and patched: by the end-of-run callback that builds it (the figures read its
``timeline_clients``), again after the figures (``figures_seconds``), and once more only when a later stage of
the run's end failed (:func:`asyncfl.runner.run_end.run_end`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

# How a run stands (summary.json's ``status``).  Only a run in progress is ``running``: summary.json is first
# written as the run ends (asyncfl.runner.run_end), always with one of the others.
RunStatus = Literal["running", "finished", "target_reached", "diverged", "interrupted", "out_of_memory", "failed"]

OPTIONAL = {"optional": True}  # a field left out of summary.json when it is None


@dataclass(frozen=True)
class RunSummary:
    """What summary.json says about one run (:class:`asyncfl.runner.callbacks.summary_json.SummaryJson` fills it)."""

    status: RunStatus
    diverged_round: int | None
    scenario: str
    algorithm: str
    seed: int
    device: str
    final_accuracy: float | None
    best_accuracy: float | None
    virtual_time_s: float
    rounds: int
    updates: int
    staleness_mean: float | None
    target_accuracy: float | None
    time_to_target_s: float | None
    rounds_to_target: int | None
    training_jobs_computed: int
    timing_only: bool
    trainer: str | None
    real_seconds: float
    versions: dict[str, str]
    machine: dict[str, str] | None
    warnings: list[str]
    timeline_clients: list[int]
    format: str | None = field(default=None, metadata=OPTIONAL)  # output.format other than csv
    reason: str | None = field(default=None, metadata=OPTIONAL)  # status failed: the exception, one line
    failed_stage: str | None = field(default=None, metadata=OPTIONAL)  # simulation, output or figures
    error: str | None = field(default=None, metadata=OPTIONAL)  # out of memory: in which stage
    figures_seconds: float | None = field(default=None, metadata=OPTIONAL)
    # a Flower ServerApp's run that ended well: what ended it (server_app: the app returned by itself; else the
    # stop rule, by its YAML path, or diverged)
    stopped_by: str | None = field(default=None, metadata=OPTIONAL)

    def as_json(self) -> dict[str, Any]:
        values = ((f, getattr(self, f.name)) for f in fields(self))
        return {f.name: value for f, value in values if value is not None or not f.metadata.get("optional")}


@dataclass(frozen=True)
class FailedSummary:
    """summary.json when the full one could not be built (its own stage failed): what the run knows."""

    status: RunStatus
    rounds: int
    reason: str | None
    failed_stage: str | None
    error: str | None

    def as_json(self) -> dict[str, Any]:
        values = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {name: value for name, value in values if value is not None or name in ("status", "rounds")}


def write_summary(out: Any, summary: RunSummary | FailedSummary) -> None:
    """summary.json, written whole (a reader sees the previous one or this one: ``out.write_json`` is atomic)."""
    out.write_json("summary.json", summary.as_json())
