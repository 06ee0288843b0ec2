"""``data.partition: {kind: file}``: the clients (and test set) a JSON file lists, exactly; every way the
file can be wrong is a ConfigError naming ``data.partition.path`` and the file."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from asyncfl.config import load_scenario
from asyncfl.config.cross_checks import check_data
from asyncfl.config.schema import Data
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets.digits import digits_arrays
from asyncfl.learn.federation import build_federation
from asyncfl.learn.partition import partition


def data_section(path, clients: int, **extra) -> Data:
    partition = {"kind": "file", "path": str(path)}
    return Data.model_validate({"dataset": "digits", "clients": clients, "partition": partition, **extra})


def write(tmp_path, content, name="partition.json"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_clients_without_test_list_index_the_training_pool(tmp_path):
    path = write(tmp_path, {"a": [5, 1, 3], "b": [0], "c": [2, 4, 7]})
    labels = np.arange(8) % 3
    parts = partition(labels, 3, data_section(path, 3).partition, np.random.default_rng(0))
    assert [p.tolist() for p in parts] == [[1, 3, 5], [0], [2, 4, 7]]  # sorted, sample 6 unused


def test_flgo_data_json_and_list_forms_read_the_same_clients(tmp_path):
    flgo_json = {"client_names": ["Client1", "Client0"], "Client0": {"data": [2]}, "Client1": {"data": [0, 1]}}
    flgo = write(tmp_path, flgo_json)
    plain = write(tmp_path, {"clients": [[0, 1], [2]], "description": "ignored"}, "plain.json")
    labels = np.zeros(3, dtype=np.int64)
    for path in (flgo, plain):
        parts = partition(labels, 2, data_section(path, 2).partition, np.random.default_rng(0))
        assert [p.tolist() for p in parts] == [[0, 1], [2]]  # client_names order decides client 0


def test_test_list_makes_the_federation_train_and_test_on_the_files_samples(tmp_path):
    """Indices count load_digits' own order (1,797 samples); the test list is the global test set."""
    pixels, target = digits_arrays()
    path = write(tmp_path, {"clients": [[0, 10, 20], [1797 - 1, 5]], "test": [3, 4, 100, 1500]})
    fed = build_federation(data_section(path, 2, test_fraction=0.0), seed=3, device=torch.device("cpu"))
    test_x = fed.features[fed.test_indices].reshape(len(fed.test_indices), -1).numpy()
    np.testing.assert_allclose(test_x, pixels[[3, 4, 100, 1500]] / 16.0, rtol=0, atol=1e-7)
    assert fed.labels[fed.test_indices].tolist() == target[[3, 4, 100, 1500]].tolist()
    for client, source in ((0, [0, 10, 20]), (1, [5, 1796])):
        rows = fed.features[fed.client_train[client]].reshape(len(source), -1).numpy()
        np.testing.assert_allclose(rows, pixels[source] / 16.0, rtol=0, atol=1e-7)
        assert fed.labels[fed.client_train[client]].tolist() == target[source].tolist()


def test_the_same_file_gives_the_same_samples_whatever_the_seed(tmp_path):
    path = write(tmp_path, {"clients": [[7, 8], [9]], "test": [0, 1, 2]})
    feds = [build_federation(data_section(path, 2, test_fraction=0.0), seed, torch.device("cpu")) for seed in (0, 1)]
    for a, b in zip(feds[0].client_train + [feds[0].test_indices], feds[1].client_train + [feds[1].test_indices]):
        assert torch.equal(feds[0].features[a], feds[1].features[b])


def test_a_relative_path_is_relative_to_the_scenario_file(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", {"clients": [[0], [1]]})
    scenario = tmp_path / "sub" / "s.yaml"
    scenario.write_text("data: {dataset: digits, clients: 2, partition: {kind: file, path: partition.json}}\n")
    assert load_scenario(scenario).data.partition.path == str(tmp_path / "sub" / "partition.json")


@pytest.mark.parametrize(
    "content, clients, expected",
    [
        (None, 2, "file not found"),
        ('{"a": [1, 2],\n "b": [3,]}', 2, "not valid JSON at line 2, column 10"),
        ({"a": [1], "b": [2], "c": [3]}, 2, "lists 3 clients but data.clients is 2: set data.clients: 3"),
        ({"a": [1], "b": []}, 2, "client 'b' holds no samples"),
        ({"a": [1], "b": ["x"]}, 2, "client 'b': expected a list of integer sample indices"),
        ([1, 2], 2, "client '0': expected a list of integer sample indices"),
        ("3", 2, "got a JSON int"),
    ],
)
def test_validate_names_the_key_and_file(tmp_path, content, clients, expected):
    path = tmp_path / "partition.json" if content is None else write(tmp_path, content)
    with pytest.raises(ConfigError) as raised:
        check_data(data_section(path, clients))
    message = str(raised.value)  # one problem: the file's, naming the key and the file
    assert message.startswith(f"data.partition.path {path}") and expected in message and "; data." not in message


def test_an_index_outside_the_pool_names_the_client_and_the_range(tmp_path):
    path = write(tmp_path, {"a": [0, 1], "b": [8]})
    expected = r"data.partition.path .*partition.json: client 'b' lists sample 8, .* allowed 0 to 7"
    with pytest.raises(ConfigError, match=expected):
        partition(np.zeros(8, dtype=np.int64), 2, data_section(path, 2).partition, np.random.default_rng(0))


@pytest.mark.parametrize(
    "content, expected",
    [
        ({"clients": [[0], [1797]], "test": [2]}, "client '1' lists sample 1797, .* allowed 0 to 1796"),
        ({"clients": [[0], [1]], "test": [-1]}, "test lists sample -1"),
        ({"clients": [[0], [1, 2]], "test": [2]}, "sample 2 is both in client '1' and in the test list"),
    ],
)
def test_a_test_list_is_checked_against_all_samples(tmp_path, content, expected):
    path = write(tmp_path, content)
    with pytest.raises(ConfigError, match=f"data.partition.path .*partition.json: {expected}"):
        build_federation(data_section(path, 2), seed=0, device=torch.device("cpu"))
