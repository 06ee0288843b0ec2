"""Run and sweep directories as Python objects whose tables are pandas DataFrames.

A :class:`Run` or :class:`Study` only reads files (each table once, when first asked for): it works
the same on a directory just written by :func:`asyncfl.run` and on one copied from another machine.
:func:`read_run` opens only a run that has ended unless asked for a partial one (``partial=True``):
the tables of a run still running, interrupted or killed hold only what it wrote until then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from asyncfl.config.yaml_files import read_yaml
from asyncfl.errors import ConfigError
from asyncfl.figures import render_run_figures
from asyncfl.output.lock import holder
from asyncfl.output.reading import DAMAGED, has_table, load_table, read_config, read_summary, table_file
from asyncfl.output.run_directory import ENDED

STUDY_FILE = "study.yaml"


def _table(directory: Path, name: str) -> pd.DataFrame:
    """``name`` (a CSV file's name) from its CSV or Parquet file (``output.format``)."""
    path = directory / name
    if not has_table(path):
        raise FileNotFoundError(f"{path}: this directory has no {name}")
    try:
        return load_table(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{table_file(path)}: not a readable table ({exc}); {DAMAGED}.") from None


def run_status(run_dir: Path) -> str:
    """How the run in ``run_dir`` stands now: summary.json's ``status`` once it has ended (``finished``,
    ``target_reached``, ``diverged``) or stopped early (``interrupted``: Ctrl-C; ``out_of_memory``; ``failed``: on
    an error, summary.json's ``reason`` says which); ``running`` while a process writes it; ``killed`` when it
    has no summary.json and no process writes it (kill -9, a machine that went down, or a copy taken while it
    ran).  A summary.json that says ``running`` (an older asyncfl wrote that for a run that raised) reads as
    ``failed``."""
    if holder(run_dir) is not None:
        return "running"
    if not (run_dir / "summary.json").is_file():
        return "killed"
    status = read_summary(run_dir).get("status")
    return "failed" if status in (None, "running") else str(status)


@dataclass(frozen=True, eq=False)
class Run:
    """One run directory.  ``metrics``, ``rounds``, ``clients``, ``updates`` are its CSV (or Parquet) files,
    ``events`` its events.jsonl, ``summary`` its summary.json, ``config`` its resolved config.yaml;
    ``status`` how it stands now (:func:`run_status`)."""

    path: Path

    @property
    def status(self) -> str:
        """``finished``, ``target_reached`` or ``diverged`` (the run has ended), else ``running``,
        ``interrupted``, ``out_of_memory``, ``failed`` or ``killed`` (its tables hold only what it wrote until then);
        read afresh every time."""
        return run_status(self.path)

    @cached_property
    def metrics(self) -> pd.DataFrame:
        return _table(self.path, "metrics.csv")

    @cached_property
    def rounds(self) -> pd.DataFrame:
        return _table(self.path, "rounds.csv")

    @cached_property
    def clients(self) -> pd.DataFrame:
        return _table(self.path, "clients.csv")

    @cached_property
    def updates(self) -> pd.DataFrame:
        return _table(self.path, "updates.csv")

    @cached_property
    def events(self) -> pd.DataFrame:
        """events.jsonl (with ``output.events`` all or sample) as one row per event."""
        path = self.path / "events.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: this run kept no events (output.events: none)")
        return pd.read_json(path, lines=True)

    @cached_property
    def summary(self) -> dict[str, Any]:
        path = self.path / "summary.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: this run has no summary.json yet (status: {self.status})")
        return read_summary(self.path)

    @cached_property
    def config(self) -> dict[str, Any]:
        """The fully resolved scenario the run was made with, as plain data."""
        if not (self.path / "config.yaml").is_file():
            raise FileNotFoundError(f"{self.path / 'config.yaml'}: this directory has no config.yaml")
        return read_config(self.path)

    def plot(self) -> list[Path]:
        """Draw (again) every figure the run's files allow, as the run draws them; returns the PNG files
        written (``python -m asyncfl plot RUN_DIR --window/--clients`` zooms the timeline)."""
        return render_run_figures(self.path)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"


def read_run(path: str | Path, *, partial: bool = False) -> Run:
    """The run directory at ``path``, if the run has ended (:attr:`Run.status` ``finished``,
    ``target_reached`` or ``diverged``).  A run still running, interrupted, out of memory, failed or killed raises
    :class:`asyncfl.ConfigError` saying which, unless ``partial=True``: then its tables hold what it
    wrote until now (check ``run.status``).  A damaged summary.json is a ConfigError naming the file
    and line."""
    run_dir = Path(path)
    if not (run_dir / "summary.json").is_file() and not has_table(run_dir / "metrics.csv"):
        raise ConfigError(f"{run_dir}: not a run directory (no summary.json or metrics.csv).")
    run = Run(run_dir)
    status = run.status
    if status not in ENDED and not partial:
        raise ConfigError(_unfinished(run_dir, status))
    return run


def _unfinished(run_dir: Path, status: str) -> str:
    what = {
        "running": f"is still running ({holder(run_dir) or 'a process'} is writing it)",
        "interrupted": "was interrupted (Ctrl-C)",
        "out_of_memory": "ran out of memory",
        "failed": f"stopped on an error ({_reason(run_dir)})",
        "killed": "did not end: it has no summary.json and no process is writing it (killed, or copied while it ran)",
    }.get(status, f"has not ended (summary.json's status: {status})")
    config = read_config(run_dir)
    flower = config.get("flower") is not None
    if status == "running":
        resume = "wait for it to end, or "
    elif flower and (config.get("server") or {}).get("mode") == "k_async":  # asyncfl's server: checkpointed
        resume = f"continue it with `python -m asyncfl flower --resume {run_dir}`, or "
    elif flower:  # a ServerApp's run writes no checkpoint (the app's state is the user's code)
        resume = "run it again (a Flower ServerApp run cannot be resumed), or "
    elif (run_dir / "config.yaml").is_file():
        resume = f"continue it with `python -m asyncfl run --resume {run_dir}`, or "
    else:
        resume = ""
    return (
        f"{run_dir}: this run {what}, so its tables hold only what it wrote until then; {resume}read them as "
        "they are with asyncfl.read_run(path, partial=True) (its Run.status says how it stands)."
    )


def _reason(run_dir: Path) -> str:
    """summary.json's ``reason`` of a failed run (an older asyncfl left ``running`` and no reason)."""
    summary = read_summary(run_dir, required=False)
    return str(summary.get("reason") or f"its summary.json still says {summary.get('status') or 'nothing'}")


@dataclass(frozen=True, eq=False)
class Study:
    """One sweep directory: its tables (``runs``, ``comparison``, ``time_to_target``, ``report``,
    ``client_accuracy``) as DataFrames, the study as run (``spec``) and every run of it
    (:meth:`run`).  ``failures``: the runs that raised, as (variant, seed, message), when this
    object comes from :func:`asyncfl.run_study`."""

    path: Path
    failures: tuple[tuple[str, int, str], ...] = field(default=())

    @cached_property
    def spec(self) -> dict[str, Any]:
        return read_yaml(self.path / STUDY_FILE)

    @cached_property
    def runs(self) -> pd.DataFrame:
        return _table(self.path, "runs.csv")

    @cached_property
    def comparison(self) -> pd.DataFrame:
        return _table(self.path, "comparison.csv")

    @cached_property
    def time_to_target(self) -> pd.DataFrame:
        return _table(self.path, "time_to_target.csv")

    @cached_property
    def report(self) -> pd.DataFrame:
        return _table(self.path, "report.csv")

    @cached_property
    def client_accuracy(self) -> pd.DataFrame:
        return _table(self.path, "client_accuracy.csv")

    @property
    def variants(self) -> list[str]:
        compare = self.spec.get("compare") or [{"name": "base"}]  # a study of seeds only: one variant, 'base'
        return [variant["name"] for variant in compare]

    def run(self, variant: str, seed: int, *, partial: bool = False) -> Run:
        """The run of ``variant`` with ``seed`` (``partial``: as :func:`read_run`)."""
        return read_run(self.path / variant / f"seed{seed}", partial=partial)

    def __repr__(self) -> str:
        return f"Study({str(self.path)!r})"


def read_study(path: str | Path) -> Study:
    """The sweep directory at ``path`` (it holds the study.yaml a sweep writes first; a damaged one is a
    ConfigError naming the file and line).  A sweep whose runs have not all ended opens too: its
    runs.csv says each run's status, and :meth:`Study.run` refuses an unfinished one unless partial."""
    sweep_dir = Path(path)
    if not (sweep_dir / STUDY_FILE).is_file():
        raise ConfigError(f"{sweep_dir}: not a sweep directory (no {STUDY_FILE}).")
    study = Study(sweep_dir)
    study.spec  # noqa: B018 - read now, so that a damaged study.yaml is reported here
    return study
