"""A ``file`` partition's indices are checked once, by the same reader, when ``validate`` asks (with the data
set's registered sizes) and when a run loads the data (with the loaded ones): an index past int64, an empty
test list, a sample listed twice, and an index out of range are refused by both, with one message."""

from __future__ import annotations

import json

import pytest
import torch

from asyncfl.config.cross_checks import check_data
from asyncfl.config.schema import Data
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import REGISTRY as DATASETS
from asyncfl.learn.datasets.digits import load
from asyncfl.learn.federation import build_federation


def data_section(path, clients: int = 2) -> Data:
    partition = {"kind": "file", "path": str(path)}
    return Data.model_validate({"dataset": "digits", "clients": clients, "partition": partition, "test_fraction": 0})


def refusals(tmp_path, content) -> tuple[str, str]:
    """(validate's message, the run's message) for a digits scenario partitioned by ``content``."""
    path = tmp_path / "partition.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    messages = []
    for attempt in (check_data, lambda data: build_federation(data, seed=0, device=torch.device("cpu"))):
        with pytest.raises(ConfigError) as raised:
            attempt(data_section(path))
        messages.append(str(raised.value))
    return messages[0], messages[1]


@pytest.mark.parametrize(
    "content, expected",
    [
        # digits: 1,438 training-pool samples, 1,797 with its test split (1,797 - 1,438 = 359)
        (
            {"a": [0, 2**70], "b": [1]},
            "client 'a' lists sample 1180591620717411303424, outside the data set's "
            "training pool of 1438 samples: allowed 0 to 1437",
        ),
        (
            {"a": [0, 1438], "b": [1]},
            "client 'a' lists sample 1438, outside the data set's training pool of 1438 samples: allowed 0 to 1437",
        ),
        (
            {"clients": [[0], [2**70]], "test": [3]},
            "client '1' lists sample 1180591620717411303424, but the data "
            "set has 1797 samples (training and test together): allowed 0 to 1796",
        ),
        (
            {"clients": [[0], [1]], "test": [-2]},
            "test lists sample -2, but the data set has 1797 samples (training and test together): allowed 0 to 1796",
        ),
        ({"a": [4, 0, 4], "b": [1]}, "client 'a' lists sample 4 twice; each sample may appear once in a list"),
        ({"clients": [[0], [1]], "test": [7, 7]}, "test lists sample 7 twice"),
        (
            {"clients": [[0], [1]], "test": []},
            "test lists no samples: the test list is the global test set, and "
            'without one no accuracy is ever measured; list at least one sample, or leave "test" out',
        ),
    ],
)
def test_validate_and_the_run_refuse_with_the_same_message(tmp_path, content, expected):
    validated, run = refusals(tmp_path, content)
    assert validated == run
    assert validated.startswith(f"data.partition.path {tmp_path / 'partition.json'}: {expected}")


def test_an_index_past_the_pool_fits_with_a_test_list_that_counts_all_samples(tmp_path):
    """Index 1,796 is outside the pool (1,438) but inside all 1,797 samples: with a test list it is a sample."""
    path = tmp_path / "partition.json"
    path.write_text(json.dumps({"clients": [[0], [1796]], "test": [3]}), encoding="utf-8")
    check_data(data_section(path))  # no error


def test_registered_sizes_are_the_loaded_ones():
    """validate bounds a file's indices with the registration's sizes: they must be what loading gives."""
    raw = load(None, seed=5)
    data = data_section("unused.json")
    assert DATASETS["digits"].pool_size(data) == len(raw.y_train) == 1438
    assert DATASETS["digits"].samples(data) == len(raw.y_train) + len(raw.y_test) == 1797
