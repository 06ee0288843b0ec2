"""benchmarks/performance/bench_gpu.py runs its tiny configuration on the CPU through the same code
that measures LeNet-5 and ResNet-18 on 1,000 clients on a GPU (issue 24, goal 6).  Not timed: the
test checks that every variant ran and that the table holds a rate and a ratio for each.  It runs on
``ASYNCFL_TEST_DEVICE`` (tests/conftest.py; cpu by default, cuda on a GPU machine)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "benchmarks" / "performance" / "bench_gpu.py")
bench_gpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_gpu)


def test_tiny_configuration_reports_every_trainer(tmp_path, test_device):
    threads = torch.get_num_threads()
    try:
        table = bench_gpu.main(["--device", str(test_device), "--tiny", "--out", str(tmp_path / "gpu.md")])
    finally:
        torch.set_num_threads(threads)
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table.splitlines()[4:]}
    assert set(rows) == {"lenet5", "resnet18"}
    lenet, resnet = rows["lenet5"], rows["resnet18"]
    # parameters, vmap chunk, sequential, batched, fused, batched / seq, fused / seq
    assert lenet[0] == "21,686" and resnet[0] == "11,173,962"
    assert all(re.fullmatch(r"[\d,]+", c) for c in lenet[2:5]) and all(c.endswith("×") for c in lenet[5:])
    assert resnet[4] == "–" and resnet[6] == "–"  # no fused path for a non-Sequential model
    assert re.fullmatch(r"[\d.]+×", resnet[5])
    assert (tmp_path / "gpu.md").read_text() == table


def test_image_federation_lives_on_the_device():
    fed = bench_gpu.image_federation(4, 3, (3, 8, 8), torch.device("meta"))
    assert fed.features.shape == (12, 3, 8, 8) and fed.features.device.type == "meta"
    assert [c.device.type for c in fed.client_train] == ["meta"] * 4
    assert fed.num_clients == 4 and fed.input_shape == (3, 8, 8)
