"""A study's mistakes are reported where they were written: a typo in a sensitivity value under
``sensitivity.values.<label>``, not the ``compare[i].set`` it was merged into; a tuning criterion naming a
column the runs do not write lists the columns they do, as the claims' message for the same mistake does."""

from __future__ import annotations

import pytest

from asyncfl.errors import ConfigError
from asyncfl.study.spec import build_study

BASE = {"data": {"clients": 4}, "stop": {"rounds": 2}, "seeds": [0]}


def problems(**keys) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        build_study({**BASE, **keys}, "study.yaml")
    return [line.strip() for line in str(raised.value).splitlines()[1:]]


def test_a_typo_in_a_sensitivity_value_is_reported_under_its_value():
    compare = [{"name": "a"}, {"name": "b", "set": {"training.local_steps": 3}}]
    values = {"low": {"training.lrr": 0.1}, "high": {"training.lr": 0.5}}
    found = problems(compare=compare, sensitivity={"axis": "lr", "variants": ["b"], "values": values})
    assert found == [
        "sensitivity.values.low.training.lrr: unknown key. Did you mean 'lr'? Allowed here: batch_size, compression, "
        "local_steps, local_work, lr, momentum, prox_mu, weight_decay."
    ]


def test_a_variants_own_typo_stays_under_its_set():
    compare = [{"name": "a"}, {"name": "b", "set": {"training.local_stepz": 3}}]
    values = {"low": {"training.lr": 0.1}, "high": {"training.lr": 0.5}}
    found = problems(compare=compare, sensitivity={"axis": "lr", "variants": ["b"], "values": values})
    assert found and all(line.startswith("compare[1].set.training.local_stepz: unknown key.") for line in found)


def test_a_bad_dotted_key_in_a_sensitivity_value_is_reported_under_its_value():
    values = {"low": {"training..lr": 0.1}, "high": {"training.lr": 0.5}}
    found = problems(compare=[{"name": "a"}], sensitivity={"axis": "lr", "values": values})
    assert found == ["sensitivity.values.low.training..lr: empty part in a dotted key."]


def test_a_criterion_naming_an_unwritten_column_lists_the_written_ones():
    tune = {"grid": {"training.lr": [0.1, 0.2]}, "criterion": "last_quarter:accuracy_class_3"}
    assert problems(compare=[{"name": "a"}], tune=tune) == [
        "tune.criterion: 'last_quarter:accuracy_class_3': the runs write no column accuracy_class_3 to metrics.csv; "
        "allowed: time, round, test_accuracy, test_loss, train_loss, updates, staleness_mean, wall_seconds "
        "(accuracy_class_<c> only with eval.per_class: true)."
    ]
