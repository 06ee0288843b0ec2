"""Every native run ends with a final status in summary.json (asyncfl.runner.run_end): an exception that is not
Ctrl-C or out of memory (here a user's callback raising) ends it ``failed`` with its ``reason``, the files of what
has run are written, and the exception reaches the caller unchanged; such a run resumes from its checkpoint as an
interrupted one does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import asyncfl
from asyncfl.errors import ConfigError
from asyncfl.runner.callbacks.summary_json import SummaryJson
from asyncfl.runner.start import resume_run

SCENARIO = {
    "name": "status",
    "seed": 3,
    "timing_only": True,
    "data": {"dataset": "digits", "clients": 12},
    "model": {"name": "logreg"},
    "server": {"mode": "sync", "clients_per_round": 4},
    "stop": {"rounds": 4},
    "eval": {"per_client": False},
    "output": {"plot": False},
}


class BreaksAt(asyncfl.Callback):
    """Raises in ``on_aggregation`` at aggregation ``at`` (or in ``on_end`` with ``at_end``)."""

    def __init__(self, at: int | None = None, at_end: bool = False) -> None:
        self.at, self.at_end = at, at_end
        self.error = RuntimeError(f"the user's callback broke at aggregation {at}\n(second line)")

    def on_aggregation(self, state, record) -> None:
        if record.round == self.at:
            raise self.error

    def on_end(self, state, now) -> None:
        if self.at_end:
            raise self.error


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _rows(path: Path) -> int:
    return len(path.read_text().splitlines()) - 1  # without the header


def test_a_callback_raising_in_on_aggregation_ends_the_run_failed_with_its_reason(tmp_path):
    breaks = BreaksAt(2)
    with pytest.raises(RuntimeError) as raised:
        asyncfl.run(SCENARIO, out=tmp_path / "run", callbacks=[breaks])
    assert raised.value is breaks.error  # re-raised unchanged
    summary = _summary(tmp_path / "run")
    assert summary["status"] == "failed"
    assert summary["reason"] == "RuntimeError: the user's callback broke at aggregation 2 (second line)"
    assert summary["rounds"] == 2 and "failed_stage" not in summary  # it failed in the simulation itself
    assert _rows(tmp_path / "run" / "rounds.csv") == 2  # the built-in callbacks recorded round 2 before it raised
    assert _rows(tmp_path / "run" / "clients.csv") == 12  # the end-of-run files of what has run
    with pytest.raises(ConfigError, match=r"stopped on an error \(RuntimeError: the user's callback broke at agg"):
        asyncfl.read_run(tmp_path / "run")
    assert asyncfl.read_run(tmp_path / "run", partial=True).status == "failed"


def test_a_callback_raising_in_on_end_fails_the_run_after_every_file_is_written(tmp_path):
    breaks = BreaksAt(at_end=True)
    with pytest.raises(RuntimeError) as raised:
        asyncfl.run(SCENARIO, out=tmp_path / "run", callbacks=[breaks])
    assert raised.value is breaks.error
    summary = _summary(tmp_path / "run")
    assert (summary["status"], summary["failed_stage"]) == ("failed", "output")
    assert summary["reason"].startswith("RuntimeError: the user's callback broke")
    assert summary["rounds"] == 4 and summary["timeline_clients"]  # the whole summary, rewritten with the failure


def test_a_failed_run_resumes_from_its_checkpoint_to_the_same_end(tmp_path):
    """A failed native run keeps its checkpoint (as out_of_memory and interrupted do): fixed, it goes on."""
    sections = {**SCENARIO, "checkpoint": {"every_rounds": 1, "min_wall_s": 0}}
    plain = asyncfl.run(sections, out=tmp_path / "plain")
    with pytest.raises(RuntimeError):
        asyncfl.run(sections, out=tmp_path / "run", callbacks=[BreaksAt(3)])
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    resume_run(tmp_path / "run")
    summary = _summary(tmp_path / "run")
    assert summary["status"] == "finished" and "reason" not in summary
    assert summary["rounds"] == 4 == plain.summary["rounds"]
    for name in ("rounds.csv", "updates.csv", "clients.csv"):
        assert (tmp_path / "run" / name).read_text() == (plain.path / name).read_text(), name


def test_a_normal_run_is_finished_and_its_summary_has_no_failure_keys(tmp_path):
    run = asyncfl.run(SCENARIO, out=tmp_path / "run")
    summary = run.summary
    assert summary["status"] == "finished" and run.status == "finished"
    assert not {"reason", "failed_stage", "error"} & summary.keys()


def test_when_the_summary_itself_cannot_be_built_summary_json_still_says_how_the_run_ended(tmp_path, monkeypatch):
    def broken(self, state, now):
        raise ValueError("no summary today")

    monkeypatch.setattr(SummaryJson, "summary", broken)
    with pytest.raises(ValueError, match="^no summary today$"):
        asyncfl.run(SCENARIO, out=tmp_path / "run")
    assert _summary(tmp_path / "run") == {
        "status": "failed", "rounds": 4, "reason": "ValueError: no summary today", "failed_stage": "output"
    }  # fmt: skip
    assert not list((tmp_path / "run").glob(".*.tmp"))
