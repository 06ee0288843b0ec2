"""benchmarks/performance/bench_realistic.py's ``--quick`` mode runs every model of issue 48's item 4 through
the code that measures them at full size.  Not timed: the test checks that each model ran on the kernel it
names, that both trainers gave the same deltas, and what the markdown table holds."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "bench_realistic", ROOT / "benchmarks" / "performance" / "bench_realistic.py"
)
bench_realistic = importlib.util.module_from_spec(_spec)
sys.modules["bench_realistic"] = bench_realistic  # its dataclasses look their module up there
_spec.loader.exec_module(bench_realistic)


@pytest.mark.slow
def test_quick_mode_measures_every_model_on_its_kernel(tmp_path):
    threads = torch.get_num_threads()
    try:
        rows = bench_realistic.main(["--quick", "--force", "--markdown", str(tmp_path / "realistic.md")])
    finally:
        torch.set_num_threads(threads)
    assert [(r["model"], r["cohort"], r["threads"]) for r in rows] == [
        (model, cohort, 1) for model in ("resnet18", "leaf_cnn", "lstm_shakespeare") for cohort in (2, 3)
    ]
    kernels = {r["model"]: r["kernel"].split(",")[0] for r in rows}
    assert kernels == {"resnet18": "vmap", "leaf_cnn": "fused", "lstm_shakespeare": "fused"}
    assert {r["model"]: r["auto"] for r in rows} == {
        "resnet18": "sequential",
        "leaf_cnn": "fused",
        "lstm_shakespeare": "sequential",
    }
    assert all(r["gap"] <= 1e-5 and r["sequential"] > 0 and r["batched"] > 0 for r in rows)
    table = (tmp_path / "realistic.md").read_text(encoding="utf-8")
    assert f"torch {torch.__version__}" in table.splitlines()[0]
    body = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(body) == 6 and all(line.count("|") == 11 for line in body)
    assert body[2].startswith("| leaf_cnn | 2 | 1 | ") and "| fused, chunk 1 |" in body[2]
    assert "Machine: " in table
