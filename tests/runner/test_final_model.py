"""final_model.npz (asyncfl/runner/callbacks/final_model.py): a native run's global model at its end, by its
torch model's state_dict names; loaded back as run-files.md shows, it scores summary.json's final_accuracy."""

from __future__ import annotations

import json

import numpy as np
import torch
from conftest import run, scenario
from torch.nn.utils import parameters_to_vector

from asyncfl.learn.datasets import dataset_spec
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model_of
from asyncfl.learn.trainer import evaluate

KEYS = dict(
    data={"dataset": "digits", "clients": 4},
    model={"name": "logreg"},
    training={"local_steps": 2},
    stop={"rounds": 3},
    output={"plot": False},
)


def test_the_final_model_loads_back_and_scores_the_final_accuracy(tmp_path):
    run_dir = run(tmp_path, **KEYS)
    s = scenario(**KEYS)
    shape, classes = dataset_spec(s.data)
    model = build_model_of(s.model, shape, classes)
    # the two lines run-files.md gives
    arrays = np.load(run_dir / "final_model.npz")
    model.load_state_dict({name: torch.from_numpy(array) for name, array in arrays.items()})
    assert sorted(arrays.files) == sorted(model.state_dict())
    federation = build_federation(s.data, s.seed, torch.device("cpu"))
    params = parameters_to_vector(model.parameters()).detach()
    accuracy, _, _ = evaluate(model, params, federation, federation.test_indices)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["rounds"] == 3 and accuracy == summary["final_accuracy"]


def test_a_timing_only_run_has_no_final_model(tmp_path):
    run_dir = run(tmp_path, **{**KEYS, "timing_only": True})
    assert (run_dir / "summary.json").is_file() and not (run_dir / "final_model.npz").exists()
