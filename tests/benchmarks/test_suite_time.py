"""benchmarks/tools/suite_time.py, which times the suite for the README (issue 45, item 14): its verdicts
against the goals and its reading of pytest's summary line (the timing itself is the lead's, not a test's)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.tools.suite_time import COMMANDS, GOALS_S, Timing, last_line  # noqa: E402


def test_the_goals_and_commands_are_the_issues_and_the_readmes():
    assert GOALS_S == {"full": 480.0, "fast": 180.0}
    assert COMMANDS["full"] == ["-m", "pytest", "-q"] and COMMANDS["fast"] == ["-m", "pytest", "-q", "-m", "not slow"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "    python -m pytest -q\n" in readme and '    python -m pytest -q -m "not slow"\n' in readme


def test_a_suite_is_within_its_goal_only_when_it_passes_in_time():
    summary = "1705 passed, 4 skipped in 479.50s (0:07:59)"
    at_goal = Timing("full", 480.0, 0, summary)
    assert at_goal.within_goal
    assert at_goal.line() == f"full suite: 480 s (8.0 min), within the goal of 8 min [{summary}]"
    over = Timing("fast", 180.4, 0, "x")
    assert not over.within_goal and over.line() == "fast suite: 180 s (3.0 min), OVER the goal of 3 min [x]"
    failed = Timing("fast", 100.0, 1, "1 failed, 9 passed in 99.0s")
    assert not failed.within_goal and "within the goal of 3 min; pytest exited 1 [1 failed" in failed.line()


def test_the_summary_is_pytests_last_line_without_its_padding():
    output = "....\n[100%]\n=== short test summary info ===\nSKIPPED x\n==== 3 passed, 1 skipped in 2.01s ====\n\n"
    assert last_line(output) == "3 passed, 1 skipped in 2.01s"
    assert last_line("") == "(no output)"
