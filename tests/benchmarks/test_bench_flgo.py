"""benchmarks/performance/bench_flgo.py gives asyncfl the anchor's own partition and test split (issue
29, item 15): a client of the converted file holds exactly the rows the anchor's scripts train that
client on (``common.load_digits_split``'s training part at the anchor's indices), and the global test
set is exactly the anchor's 360 test rows."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from asyncfl.config import load_scenario
from asyncfl.learn.federation import build_federation

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_flgo", ROOT / "benchmarks" / "performance" / "bench_flgo.py")
bench_flgo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_flgo)


def anchor_split():
    """The anchor's ``common.load_digits_split`` (anchors/flgo/common.py), as (Xtr, ytr, Xte, yte)."""
    d = load_digits()
    x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, stratify=y, random_state=0)
    return xtr, ytr, xte, yte


def test_converted_partition_trains_and_tests_on_the_anchors_samples(tmp_path):
    anchor_clients = [[40, 35, 56, 6], [1436, 0], [700, 12, 13]]  # indices into the anchor's training split
    (tmp_path / "partition.json").write_text(json.dumps({"description": "x", "clients": anchor_clients}))
    converted = bench_flgo.partition_for_asyncfl(tmp_path, tmp_path / "converted.json")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("data: {dataset: digits, clients: 3}\n")
    overrides = bench_flgo.asyncfl_overrides("mlp", "cpu", converted)
    fed = build_federation(load_scenario(scenario, overrides).data, seed=0, device=torch.device("cpu"))
    xtr, ytr, xte, yte = anchor_split()
    for k, indices in enumerate(anchor_clients):
        assert len(fed.client_test[k]) == 0  # data.test_fraction 0: the anchor holds nothing out
        rows = fed.features[fed.client_train[k]].reshape(len(indices), -1).numpy()
        got = {(r.tobytes(), int(label)) for r, label in zip(rows, fed.labels[fed.client_train[k]].tolist())}
        assert got == {(xtr[i].tobytes(), int(ytr[i])) for i in indices}
    test_rows = fed.features[fed.test_indices].reshape(len(fed.test_indices), -1).numpy()
    assert len(test_rows) == 360
    got = sorted((r.tobytes(), int(label)) for r, label in zip(test_rows, fed.labels[fed.test_indices].tolist()))
    assert got == sorted((r.tobytes(), int(label)) for r, label in zip(xte, yte))
