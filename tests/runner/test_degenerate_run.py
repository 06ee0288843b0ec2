"""A run that aggregates no update for its whole length (issue 19, item 14: ``server.deadline_s: 1e-9``)
still ends with exit 0 (the scenario is valid), but says so: a warning on stderr and in summary.json."""

from __future__ import annotations

import json

import yaml

from asyncfl.cli import main

SCENARIO = dict(
    data={"dataset": "digits", "clients": 8},
    model={"name": "logreg"},
    server={"mode": "sync", "late_updates": "drop"},
    stop={"rounds": 3},
    output={"plot": False},
)


def _run(tmp_path, name: str, deadline_s: float, capsys) -> tuple[int, dict, str]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**SCENARIO, "server": {**SCENARIO["server"], "deadline_s": deadline_s}}))
    code = main([str(path), "--quiet", "--out", str(tmp_path / name)])
    summary = json.loads((tmp_path / name / "summary.json").read_text())
    return code, summary, capsys.readouterr().err


def test_a_run_that_aggregated_nothing_warns_on_stderr_and_in_summary_json(tmp_path, capsys):
    code, summary, err = _run(tmp_path, "never", 1e-9, capsys)
    assert code == 0 and summary["status"] == "finished" and summary["updates"] == 0 and summary["rounds"] == 3
    (warning,) = summary["warnings"]
    assert warning.startswith("no update was aggregated in the whole run (3 aggregation(s)")
    assert "deadline 24" in warning  # 8 clients x 3 rounds, every task cut at the deadline
    assert f"warning: {warning}" in err


def test_a_run_that_aggregated_updates_has_no_warning(tmp_path, capsys):
    code, summary, err = _run(tmp_path, "normal", 60.0, capsys)
    assert code == 0 and summary["updates"] > 0 and summary["warnings"] == []
    assert "warning" not in err
