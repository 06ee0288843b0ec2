"""Accuracies are counts of correct predictions divided in float64: 337 right of 359 is exactly 337 / 359
in every output, not the float32 mean of a correctness vector (0.9387186765670776)."""

from __future__ import annotations

import json
import math

import numpy as np
import torch

from asyncfl.algorithms import make_strategy
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, evaluate, hit_rate
from asyncfl.runner.learning import Learner
from tests.conftest import run, scenario, table


def fraction(correct: np.ndarray) -> float:
    """The exact share: an integer count over an integer length, in float64 (NaN when empty)."""
    return int(correct.sum()) / len(correct) if len(correct) else math.nan


def test_hit_rate_is_the_count_over_the_length():
    hits = torch.zeros(359, dtype=torch.bool)
    hits[:337] = True
    assert hit_rate(hits) == 337 / 359 and repr(hit_rate(hits)) == "0.9387186629526463"
    assert float(hits.float().mean()) != 337 / 359  # what float32 gives instead: 0.9387186765670776
    assert math.isnan(hit_rate(hits[:0]))


def test_learner_accuracies_are_exact_fractions():
    """Global, per-class and per-client accuracy of a trained-for-nothing model equal the counts a
    numpy argmax gives, divided exactly: compared with ==, not approx."""
    s = scenario(data={"dataset": "digits", "clients": 7, "test_fraction": 0.3}, model={"name": "logreg"})
    fed = build_federation(s.data, s.seed, torch.device("cpu"))
    torch.manual_seed(1)
    model = build_model("logreg", fed.input_shape, fed.num_classes)
    w0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    learner = Learner(
        model, fed, make_strategy(s.algorithm, 7, w0), SequentialTrainer(model, fed, s.training, 0), s.training
    )
    with torch.no_grad():
        predicted = model(fed.features).argmax(1).numpy()
    correct = predicted == fed.labels.numpy()

    accuracy, _, per_class = learner.test_metrics()
    test = fed.test_indices.numpy()
    assert accuracy == fraction(correct[test])
    assert 0 < accuracy < 1 and len(test) not in (2**k for k in range(12))  # not a dyadic fraction: float32 != float64
    labels = fed.labels.numpy()[test]
    assert per_class == [fraction(correct[test][labels == c]) for c in range(fed.num_classes)]
    assert learner.client_accuracies() == [fraction(correct[t.numpy()]) for t in fed.client_test]
    assert evaluate(model, w0, fed, fed.test_indices)[0] == accuracy


def test_written_accuracies_are_exact_fractions(tmp_path):
    """summary.json holds repr(k / n) for the global test set of n samples; metrics.csv's accuracy columns
    and clients.csv's accuracy are those fractions rounded as every CSV float is (6 decimals)."""
    sections = {
        "data": {"dataset": "digits", "clients": 6, "test_fraction": 0.25},
        "model": {"name": "logreg"},
        "training": {"local_steps": 3, "batch_size": 16, "lr": 0.1},
        "server": {"mode": "sync"},
        "stop": {"rounds": 2},
        "eval": {"every_rounds": 1, "per_class": True, "per_client": True},
        "output": {"plot": False, "events": "none"},
    }
    run_dir = run(tmp_path, **sections)
    fed = build_federation(scenario(**sections).data, 0, torch.device("cpu"))
    n = len(fed.test_indices)
    summary_text = (run_dir / "summary.json").read_text()
    accuracy = json.loads(summary_text)["final_accuracy"]
    correct = round(accuracy * n)
    assert accuracy == correct / n and f'"final_accuracy": {correct / n!r}' in summary_text

    last = table(run_dir / "metrics.csv")[-1]
    assert float(last["test_accuracy"]) == round(correct / n, 6)
    labels = fed.labels[fed.test_indices].numpy()
    for c in range(fed.num_classes):
        size = int((labels == c).sum())
        value = float(last[f"accuracy_class_{c}"])
        assert value == round(round(value * size) / size, 6)  # k_c / n_c for an integer k_c
    sizes = [len(t) for t in fed.client_test]
    for row, size in zip(table(run_dir / "clients.csv"), sizes):
        assert float(row["accuracy"]) == round(round(float(row["accuracy"]) * size) / size, 6)
