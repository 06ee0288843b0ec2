"""The shipped Shakespeare showcase learns (issue 45, item 11): before, its accuracy stayed at always answering
a space (0.147 on its test set) from round 2 to 20."""

from __future__ import annotations

import json

import pytest

from asyncfl.cli import main

SPACE = 0.146927  # always answering a space, the most frequent next character of the scenario's test set


@pytest.mark.slow
def test_the_showcase_leaves_the_space_level_within_12_rounds(tmp_path):
    """Seed 0 reaches 0.195 at round 12 on the machine that drew plots/shakespeare_sync.png (0.31 at its
    round 40); the old scenario was still at the space level there, exactly.  The bound, 0.01 above that level,
    leaves 3.8 points of margin: more than twice the largest spread measured between two CPUs' kernel sets on
    one config (1.5 points of last-quarter accuracy, FL-FDMS, issue 47) and still excludes the old scenario."""
    out = tmp_path / "run"
    code = main(["scenarios/shakespeare_sync.yaml", "--quiet", "--out", str(out), "--set", "stop.rounds=12",
                 "--set", "output.plot=false"])  # fmt: skip
    assert code == 0
    assert json.loads((out / "summary.json").read_text())["final_accuracy"] > SPACE + 0.01
