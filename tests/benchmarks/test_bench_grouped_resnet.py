"""benchmarks/performance/bench_grouped_resnet.py times ResNet-18-GN's cohort as one wide network of grouped
convolutions: it is only a fair stand-in for the cohort if it computes each client's own logits and
gradients.  Checked here against the model run client by client; and ``--quick`` writes its table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "bench_grouped_resnet", ROOT / "benchmarks" / "performance" / "bench_grouped_resnet.py"
)
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_grouped_resnet"] = bench
_spec.loader.exec_module(bench)


@pytest.mark.slow
def test_the_wide_network_gives_each_client_its_own_logits_and_gradients():
    from asyncfl.learn.models import build_model

    torch.manual_seed(0)
    model = build_model("resnet18", bench.IMAGE, bench.CLASSES)
    clients, batch = 3, 2
    x = torch.randn(clients, batch, *bench.IMAGE)
    y = torch.randint(0, bench.CLASSES, (clients, batch))
    wide = bench.widened(model, clients)
    stacked = x.permute(1, 0, 2, 3, 4).reshape(batch, clients * bench.IMAGE[0], *bench.IMAGE[1:])
    logits = bench.wide_logits(wide, stacked).view(batch, clients, bench.CLASSES)
    loss = sum(nn.functional.cross_entropy(logits[:, j], y[j], reduction="sum") for j in range(clients))
    loss.backward()
    first_conv = wide.conv1.weight.grad.view(clients, *model.conv1.weight.shape)
    for j in range(clients):
        model.zero_grad()
        own = model(x[j])
        torch.testing.assert_close(logits[:, j], own, atol=1e-4, rtol=1e-4)
        nn.functional.cross_entropy(own, y[j], reduction="sum").backward()
        torch.testing.assert_close(first_conv[j], model.conv1.weight.grad, atol=1e-3, rtol=1e-3)


@pytest.mark.slow
def test_quick_mode_writes_a_row_per_cohort(tmp_path):
    threads = torch.get_num_threads()
    try:
        bench.main(["--quick", "--markdown", str(tmp_path / "grouped.md")])
    finally:
        torch.set_num_threads(threads)
    rows = [line for line in (tmp_path / "grouped.md").read_text().splitlines() if line.startswith("| 2 |")]
    assert len(rows) == 1 and rows[0].count("×") == 2
