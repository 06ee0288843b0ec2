"""Run and sweep directories as Python objects whose tables are pandas DataFrames.

A :class:`Run` or :class:`Study` only reads files (each table once, when first asked for): it works
the same on a directory just written by :func:`asyncfl.run` and on one copied from another machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from asyncfl.errors import ConfigError
from asyncfl.figures import render_run_figures
from asyncfl.run_files import has_table, load_table

STUDY_FILE = "study.yaml"


def _table(directory: Path, name: str) -> pd.DataFrame:
    """``name`` (a CSV file's name) from its CSV or Parquet file (``output.format``)."""
    path = directory / name
    if not has_table(path):
        raise FileNotFoundError(f"{path}: this directory has no {name}")
    return load_table(path)


@dataclass(frozen=True, eq=False)
class Run:
    """One run directory.  ``metrics``, ``rounds``, ``clients``, ``updates`` are its CSV (or Parquet) files,
    ``events`` its events.jsonl, ``summary`` its summary.json, ``config`` its resolved config.yaml."""

    path: Path

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
        return json.loads((self.path / "summary.json").read_text(encoding="utf-8"))

    @cached_property
    def config(self) -> dict[str, Any]:
        """The fully resolved scenario the run was made with, as plain data."""
        return yaml.safe_load((self.path / "config.yaml").read_text(encoding="utf-8"))

    def plot(self) -> list[Path]:
        """Draw (again) every figure the run's files allow, as the run draws them; returns the PNG files
        written (``python -m asyncfl plot RUN_DIR --window/--clients`` zooms the timeline)."""
        return render_run_figures(self.path)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"


def read_run(path: str | Path) -> Run:
    """The run directory at ``path`` (it must hold a summary.json: a run that has started)."""
    run_dir = Path(path)
    if not (run_dir / "summary.json").is_file() and not has_table(run_dir / "metrics.csv"):
        raise ConfigError(f"{run_dir}: not a run directory (no summary.json or metrics.csv).")
    return Run(run_dir)


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
        return yaml.safe_load((self.path / STUDY_FILE).read_text(encoding="utf-8"))

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

    def run(self, variant: str, seed: int) -> Run:
        """The run of ``variant`` with ``seed``."""
        return read_run(self.path / variant / f"seed{seed}")

    def __repr__(self) -> str:
        return f"Study({str(self.path)!r})"


def read_study(path: str | Path) -> Study:
    """The sweep directory at ``path`` (it holds the study.yaml a sweep writes first)."""
    sweep_dir = Path(path)
    if not (sweep_dir / STUDY_FILE).is_file():
        raise ConfigError(f"{sweep_dir}: not a sweep directory (no {STUDY_FILE}).")
    return Study(sweep_dir)
