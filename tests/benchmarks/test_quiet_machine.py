"""The load check of every benchmark that writes into docs/ (issue 29, item 14): a busy machine stops
the script before it measures (exit 1, one message) unless --force, and then the table says it was
forced and at which load; a quiet machine's table says its load too, and each names its CPU.  Every script that writes
docs/results/ uses this one helper (checked by reading them)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.tools.quiet_machine import LOAD_PER_CORE, add_force_argument, check_load  # noqa: E402

# every script whose default output is under docs/results/ (bench_gpu.py writes only with --out; the
# docs/figures/ scripts draw virtual-time results, which the machine's load cannot change)
WRITERS = [
    "benchmarks/performance/bench_figures.py",
    "benchmarks/performance/bench_flgo.py",
    "benchmarks/performance/bench_overhead.py",
    "benchmarks/performance/bench_population.py",
    "benchmarks/performance/bench_startup.py",
    "benchmarks/performance/bench_threads.py",
    "benchmarks/performance/bench_trainer.py",
    "benchmarks/performance/main_scenarios.py",
    "benchmarks/experiments/accuracy_spread.py",
    "benchmarks/experiments/reproduce_papers.py",
    "benchmarks/experiments/straggler_mitigation.py",
]


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_force_argument(parser)
    return parser.parse_args(argv)


def test_a_busy_machine_refuses_with_one_message():
    busy = (1.5, 1.2, 0.9)  # 0.75 per core on 2 cores
    with pytest.raises(SystemExit) as stopped:
        check_load(_parse([]).force, "docs/results/x.md", loadavg=lambda: busy, core_count=lambda: 2)
    message = str(stopped.value.code)
    assert message.startswith("error: the machine is busy") and "docs/results/x.md" in message
    assert "load average 1.50 (1 min), 1.20 (5 min) on 2 cores (0.75 per core)" in message and "--force" in message


def test_force_writes_and_the_table_says_it_was_forced_and_at_which_load(tmp_path):
    load = check_load(_parse(["--force"]).force, "x", loadavg=lambda: (6.0, 4.0, 2.0), core_count=lambda: 2,
                      cpu_name=lambda: "Some CPU @ 2.20GHz")  # fmt: skip
    assert load.forced and load.busy
    table = tmp_path / "x.md"
    table.write_text("| a |\n| --- |\n| 1 |\n" + load.note())
    note = table.read_text().splitlines()[-1]
    assert note.startswith("Machine: FORCED on a busy machine (--force): load average 6.00 (1 min)")
    assert "on 2 cores (3.00 per core)" in note and note.endswith(". CPU: Some CPU @ 2.20GHz.")
    assert load.fields() == {"load_1min": "6.00", "cores": "2", "forced": "true"}


def test_a_quiet_machine_writes_its_load_and_the_threshold_is_per_core():
    at_threshold = check_load(False, "x", loadavg=lambda: (LOAD_PER_CORE * 4, 0.1, 0.1), core_count=lambda: 4,
                              cpu_name=lambda: "")  # fmt: skip
    assert not at_threshold.forced and not at_threshold.busy
    assert at_threshold.note().strip() == (
        "Machine: load average 2.00 (1 min), 0.10 (5 min) on 4 cores (0.50 per core) before measuring: "
        "quiet (at most 0.5 per core)."
    )  # a CPU whose name is unknown: no CPU sentence
    assert at_threshold.fields()["forced"] == "false"
    with pytest.raises(SystemExit):  # the same load on 2 cores is busy
        check_load(False, "x", loadavg=lambda: (2.0, 0.1, 0.1), core_count=lambda: 2)


@pytest.mark.parametrize("script", WRITERS)
def test_every_script_writing_docs_results_checks_the_load_through_the_helper(script):
    text = (ROOT / script).read_text()
    assert "from benchmarks.tools.quiet_machine import" in text
    assert re.search(r"add_force_argument\(", text) and re.search(r"check_load\(", text)
    assert "LOAD_PER_CORE" not in text and "/proc/loadavg" not in text  # the helper's check, not a copy
