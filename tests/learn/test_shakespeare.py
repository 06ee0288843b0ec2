"""LEAF-style Shakespeare: the Gutenberg parser, the shipped data file, the natural clients, the LSTM and its
fused batched trainer, and the clear errors around them."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from torch.nn.utils import parameters_to_vector

from asyncfl.cli import main
from asyncfl.config import validate_scenario
from asyncfl.config.schema import Data
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import load_arrays, shakespeare
from asyncfl.learn.federation import build_federation
from asyncfl.learn.fused_lstm import LstmFusedTrainer, lstm_layers
from asyncfl.learn.models import build_model
from asyncfl.learn.models.lstm_shakespeare import LstmShakespeare
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Training

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_shakespeare", ROOT / "benchmarks/tools/build_shakespeare.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

# --- the parser --------------------------------------------------------------------------------

PLAY = """THE TRAGEDY OF TEST

PERSONS REPRESENTED.

Hamlet, Prince of Denmark.
Horatio, his friend.

ACT I.

Scene I. Elsinore. A platform.

[Enter Hamlet and Horatio.]

Ham.
Who's there? [Aside.] Speak,
Or be gone.

Hor.
Friend to this ground; a prose line that runs on, as prose does, without any verse at all.

[Exit Horatio, slowly,
and sadly.]

Ham.
Alone.

[Exit.]

And yet I stay.

ACT II.

1 Clown.
Is she to be buried?
"""

CAPITALS = """ACT I.

THESEUS
Now, fair Hippolyta,

[Exit PHILOSTRATE.]

Hippolyta, I woo'd thee.

HIPPOLYTA
Four days.
"""


def test_the_parser_keeps_speeches_in_order_without_headings_or_stage_directions():
    speeches = build.parse_play(PLAY)
    assert speeches == [
        ("Ham", "Who's there?  Speak,\nOr be gone."),
        ("Hor", "Friend to this ground; a prose line that runs on, as prose does, without any verse at all."),
        ("Ham", "Alone."),
        ("Ham", "And yet I stay."),  # a block after a stage direction continues the speaker
        ("1 Clown", "Is she to be buried?"),
    ]  # the persons represented (before ACT I) and the multi-line [Exit ...] are gone


def test_headings_in_capitals_without_a_full_stop_and_role_texts_read_the_leaf_way():
    speeches = build.parse_play(CAPITALS)
    assert speeches == [("THESEUS", "Now, fair Hippolyta,"), ("THESEUS", "Hippolyta, I woo'd thee."),
                        ("HIPPOLYTA", "Four days.")]  # fmt: skip
    roles = build.role_texts(build.parse_play(PLAY))
    # newlines read as spaces, runs of spaces as one
    assert roles["HAM"] == "Who's there? Speak, Or be gone. Alone. And yet I stay."
    assert build.in_vocabulary("a\tb|c") == ("a b c", 2)
    assert len(build.VOCABULARY) == 80 and len(set(build.VOCABULARY)) == 80


# --- the data file -----------------------------------------------------------------------------


def test_the_shipped_file_matches_its_fingerprint_and_role_count():
    assert hashlib.sha256(shakespeare.DATA_FILE.read_bytes()).hexdigest() == shakespeare.DATA_SHA256
    roles = shakespeare.read_roles(shakespeare.DATA_FILE)
    assert len(roles) == shakespeare.ROLES == len(shakespeare.role_names())
    assert all(len(text) >= shakespeare.SEQUENCE + 2 and text.max() < 80 for text in roles)


def test_windows_are_the_80_characters_before_each_target():
    text = np.arange(83, dtype=np.uint8) % 80
    x, y = shakespeare.windows(text)
    assert x.shape == (3, 80) and x.dtype == np.uint8 and y.tolist() == [0, 1, 2]  # 80 % 80, 81 % 80, 82 % 80
    assert x[2].tolist() == (np.arange(2, 82) % 80).tolist()


def data(**kw) -> Data:
    return Data.model_validate({"dataset": "shakespeare", "test_fraction": 0.1, **kw})


def test_clients_are_chosen_roles_split_in_time_order():
    section = data(clients=5)
    assert section.partition.kind == "natural"  # the default for shakespeare
    raw = load_arrays(section, seed=0)
    again = load_arrays(data(clients=5), seed=123)  # the run's seed does not change the roles
    assert np.array_equal(raw.y_train, again.y_train) and np.array_equal(raw.x_test, again.x_test)
    chosen = shakespeare.choose_roles(shakespeare.ROLES, 5, 0)
    roles = shakespeare.read_roles(shakespeare.DATA_FILE)
    for k, role in enumerate(chosen):
        text = roles[role]
        n = len(text) - 80
        n_test = max(1, round(0.1 * n))
        train_y = raw.y_train[raw.client_of_train == k]
        test_y = raw.y_test[raw.client_of_test == k]
        assert len(train_y) == n - n_test and len(test_y) == n_test
        assert train_y.tolist() == text[80 : 80 + n - n_test].tolist()  # the first windows train, the last test
        assert test_y.tolist() == text[80 + n - n_test :].tolist()
    capped = load_arrays(data(clients=5, shakespeare={"test_cap": 3}), seed=0)
    assert np.bincount(capped.client_of_test).max() <= 3


def test_client_sizes_reach_the_federation():
    fed = build_federation(data(clients=4), 0, torch.device("cpu"))
    roles = shakespeare.read_roles(shakespeare.DATA_FILE)
    sizes = [len(roles[r]) - 80 for r in shakespeare.choose_roles(shakespeare.ROLES, 4, 0)]
    assert [len(tr) + len(te) for tr, te in zip(fed.client_train, fed.client_test)] == sizes


# --- bad input ---------------------------------------------------------------------------------

BASE = {"data": {"dataset": "shakespeare", "clients": 3, "test_fraction": 0.1},
        "model": {"name": "lstm_shakespeare"}, "stop": {"rounds": 1}}  # fmt: skip


def scenario(**data_keys):
    return validate_scenario({**BASE, "data": {**BASE["data"], **data_keys}})


def test_more_clients_than_roles_is_refused_with_the_number_of_roles():
    with pytest.raises(ConfigError, match=r"data\.clients \(5000\) is larger than the 1165 roles.*allowed: 1 to 1165"):
        scenario(clients=5000)


def test_a_partition_that_does_not_apply_is_refused():
    refused = r"data\.partition\.kind iid does not apply to data\.dataset shakespeare.*allowed: natural"
    with pytest.raises(ConfigError, match=refused):
        scenario(partition={"kind": "iid"})
    with pytest.raises(ConfigError, match=r"data\.partition\.kind natural needs a data set with clients of its own"):
        validate_scenario({"data": {"dataset": "digits", "partition": {"kind": "natural"}}, "stop": {"rounds": 1}})
    with pytest.raises(ConfigError, match=r"model\.name mlp .*data\.dataset 'shakespeare' holds text"):
        validate_scenario({**BASE, "model": {"name": "mlp"}})


@pytest.mark.parametrize("content", [None, b"not the file"])
def test_a_missing_or_damaged_data_file_is_a_clear_error(tmp_path, monkeypatch, content):
    path = tmp_path / "shakespeare.json.xz"
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setattr(shakespeare, "DATA_FILE", path)
    with pytest.raises(ConfigError) as raised:
        shakespeare.check_files(data(clients=2))
    problem = str(raised.value)
    assert ("missing" if content is None else "damaged") in problem and "reinstall asyncfl" in problem
    with pytest.raises(ConfigError, match="data.dataset shakespeare: its data file"):
        load_arrays(data(clients=2), seed=0)


@pytest.mark.slow
def test_the_cli_exits_2_without_a_traceback():
    out = subprocess.run(
        [sys.executable, "-m", "asyncfl", "validate", "scenarios/shakespeare_sync.yaml", "--set", "data.clients=2000"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr and "1165 roles" in out.stderr + out.stdout


# --- the model and its fused trainer -----------------------------------------------------------


def test_the_default_model_is_leafs():
    model = build_model("lstm_shakespeare", (80,), 80)
    assert sum(p.numel() for p in model.parameters()) == 819_920  # 8-dim embedding, 2 x LSTM 256, 80-way head
    assert model.lstm.hidden_size == 256 and model.lstm.num_layers == 2 and lstm_layers(model) == 2
    assert model(torch.zeros(3, 80, dtype=torch.uint8)).shape == (3, 80)


@pytest.mark.parametrize("layers", [1, 2])
def test_the_fused_trainer_gives_the_sequential_deltas(layers):
    torch.manual_seed(0)
    model = build_model("lstm_shakespeare", (80,), 80, params=LstmShakespeare(units=12, layers=layers))
    sizes = [3, 12, 25, 7]  # a client with fewer samples than the batch trains on all of them
    start = np.cumsum([0] + sizes)
    x = torch.randint(0, 80, (start[-1], 80), dtype=torch.uint8)
    y = torch.randint(0, 80, (start[-1],))
    train = [torch.arange(start[k], start[k + 1]) for k in range(len(sizes))]
    fed = SimpleNamespace(features=x, labels=y, client_train=train, client_test=train, test_indices=train[0])
    training = Training(batch_size=10, lr=0.5, momentum=0.5, weight_decay=1e-3)
    base = parameters_to_vector(model.parameters()).detach()
    jobs = [TrainingJob(k, 0, attempt=k, steps=1 + k % 3) for k in range(len(sizes))]
    reference = SequentialTrainer(model, fed, training, seed=3).run(base, jobs)
    fused = LstmFusedTrainer(model, fed, training, seed=3, chunk_size=3).run(base, jobs)  # two chunks
    for a, b in zip(reference, fused):
        assert a.num_steps == b.num_steps
        assert float(a.delta.abs().max()) > 1e-3  # the jobs did move the model
        torch.testing.assert_close(b.delta, a.delta, rtol=1e-4, atol=1e-6)
        assert b.train_loss == pytest.approx(a.train_loss, rel=1e-5)
        assert b.train_loss_sq == pytest.approx(a.train_loss_sq, rel=1e-5)


# --- end to end --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shakespeare_sync"])
def test_the_scenario_runs_offline_for_two_rounds(tmp_path, monkeypatch, name):
    monkeypatch.chdir(ROOT)  # the command in this process: its exit status is not what is checked
    overrides = ["--set", "stop.rounds=2", "--set", f"output.dir={tmp_path}", "--set", "output.plot=false"]
    assert main([f"scenarios/{name}.yaml", "--quiet", *overrides]) == 0
    (run,) = (tmp_path / name).iterdir()
    clients = pd.read_csv(run / "clients.csv")
    roles = shakespeare.read_roles(shakespeare.DATA_FILE)
    sizes = [len(roles[r]) - 80 for r in shakespeare.choose_roles(shakespeare.ROLES, len(clients), 0)]
    # the scenario holds out the last 10% of each role's windows, at most 20 (data.shakespeare.test_cap)
    assert clients["train_samples"].tolist() == [n - shakespeare.test_count(n, 0.1, 20) for n in sizes]
