"""benchmarks/performance/bench_pfl.py feeds pfl-research and asyncfl the same samples and weights (issue 48,
item 5): the 28x28 files asyncfl's ``mnist`` reads are the anchor's digits, each pixel repeated 3x3 inside a
2-pixel frame, and the workload file pfl trains on holds, client by client, the samples asyncfl's federation
gives that client, its test set and its initial weights."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from asyncfl.config import load_scenario
from asyncfl.learn.datasets._torchvision import read_mnist
from asyncfl.learn.federation import build_federation
from asyncfl.runner.parts import initial_model

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_pfl", ROOT / "benchmarks" / "performance" / "bench_pfl.py")
bench_pfl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_pfl)


def anchor_digits():
    """The anchor's ``common.load_digits_split`` before scaling: pixels 0..16, (Xtr, ytr, Xte, yte)."""
    d = load_digits()
    xtr, xte, ytr, yte = train_test_split(d.data, d.target, test_size=0.2, stratify=d.target, random_state=0)
    return xtr, ytr, xte, yte


def test_mnist_like_files_are_the_anchors_digits_framed_at_28x28(tmp_path):
    bench_pfl.write_mnist_like(tmp_path)
    x_tr, y_tr, x_te, y_te = read_mnist(tmp_path / "MNIST" / "raw")
    xtr, ytr, xte, yte = anchor_digits()
    assert x_tr.shape == (1437, 1, 28, 28) and x_te.shape == (360, 1, 28, 28)
    assert (y_tr == ytr).all() and (y_te == yte).all()
    # pixel 16 -> 255, 8 -> 128 (127.5 rounded to even), 0 -> 0; every 8x8 pixel fills a 3x3 block
    block = x_tr[5, 0, 2:26, 2:26].reshape(8, 3, 8, 3)
    assert (block == block[:, :1, :, :1]).all()
    assert (block[:, 0, :, 0] == np.rint(xtr[5].reshape(8, 8) * 255 / 16)).all()
    assert x_tr[:, :, :2].max() == 0 and x_tr[:, :, 26:].max() == 0 and x_tr[:, :, :, :2].max() == 0


def test_pfl_workload_holds_asyncfls_clients_test_set_and_initial_weights(tmp_path):
    anchor_clients = [[40, 35, 56, 6], [1436, 0], [700, 12, 13]]  # indices into the anchor's training split
    (tmp_path / "partition.json").write_text(json.dumps({"clients": anchor_clients}))
    bench_pfl.write_mnist_like(tmp_path / "data")
    bench_pfl.partition_file(tmp_path, "lenet5", tmp_path / "partition_lenet5.json")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("data: {dataset: digits, clients: 3}\nmodel: {name: mlp}\n")
    sets = bench_pfl.asyncfl_sets("lenet5", tmp_path, rounds=2)
    sizes = bench_pfl.write_pfl_workload(scenario, sets, "lenet5", 2, tmp_path / "w.npz")
    assert sizes == {"client_size": 3.0, "test_size": 360}
    raw = np.load(tmp_path / "w.npz")
    assert raw["offsets"].tolist() == [0, 4, 6, 9]
    _, ytr, _, yte = anchor_digits()
    for k, (a, b) in enumerate(zip(raw["offsets"][:-1], raw["offsets"][1:])):  # a client's samples, any order
        assert sorted(raw["y"][a:b].tolist()) == sorted(int(ytr[i]) for i in anchor_clients[k])
    assert raw["test_y"].tolist() == yte.tolist() and raw["test_x"].shape == (360, 1, 28, 28)
    s = load_scenario(scenario, sets)
    fed = build_federation(s.data, s.seed, torch.device("cpu"))
    assert np.array_equal(raw["x"][4:6], fed.features[fed.client_train[1]].numpy())
    weights = initial_model(s, fed).state_dict()
    assert sorted(k[len("param:") :] for k in raw.files if k.startswith("param:")) == sorted(weights)
    assert all(np.array_equal(raw[f"param:{k}"], v.numpy()) for k, v in weights.items())
    settings = {"model": "lenet5", "rounds": 2, "local_steps": 5, "batch_size": 32, "lr": 0.05}
    assert json.loads(str(raw["settings"])) == settings
