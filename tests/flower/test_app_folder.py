"""A Flower app folder (issue 46, item 6) runs as ``flwr run APP_DIR`` runs it: ``pyproject.toml``'s
``[tool.flwr.app.components]`` names the apps, ``[tool.flwr.app.config]`` gives the run config's defaults, under the
scenario's ``flower.run_config``, under ``--run-config``; ``flower.node_config`` reaches each node's Context."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("flwr")

from template_app import write_template_app  # noqa: E402  (tests/flower is on sys.path)

from asyncfl.cli.main import main  # noqa: E402
from asyncfl.flower.app_folder import parse_run_config, read_app_folder  # noqa: E402

SCENARIO = """\
name: app_folder
data: {clients: 4}
output: {plot: false}
population: {compute: {samples_per_s: 50}}
flower:
  run_config: {num-server-rounds: 2, lr: 0.1}
  node_config: {data-path: "data/{partition-id}.npz", speed: "{samples-per-s}", fast: true}
"""


@pytest.fixture
def app(tmp_path, request):
    """A template app folder whose package is named for the test (its modules leave sys.modules afterwards)."""
    package = "tpl_" + request.node.name.replace("[", "_").replace("]", "").replace("-", "_")[:40]
    folder = write_template_app(tmp_path / "app", package)
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    yield folder, package
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]


def test_the_folder_is_read_as_flwr_reads_it(app):
    folder, package = app
    read = read_app_folder(folder)
    assert (read.server_app, read.client_app) == (f"{package}.server_app:app", f"{package}.client_app:app")
    assert read.config == {"num-server-rounds": 3, "fraction-train": 0.5, "local-epochs": 1, "lr": 0.01}


def test_run_config_is_parsed_as_flwr_run_parses_it(tmp_path):
    """Space-separated key=value pairs, TOML values (a quoted string, an int, a float, a bool), the flag repeated;
    or one TOML file, nested tables flattened to dotted keys."""
    assert parse_run_config(['lr=0.5 name="a b" local-epochs=2', "on=true"]) == {
        "lr": 0.5, "name": "a b", "local-epochs": 2, "on": True,
    }  # fmt: skip
    toml = tmp_path / "over.toml"
    toml.write_text('lr = 0.25\n[model]\nkind = "mlp"\n')
    assert parse_run_config([str(toml)]) == {"lr": 0.25, "model.kind": "mlp"}


def test_the_client_app_sees_the_fused_run_config_and_its_node_config(app, tmp_path):
    """Precedence, by hand: pyproject says rounds 3, fraction-train 0.5, local-epochs 1, lr 0.01; the scenario
    rounds 2 and lr 0.1; --run-config lr 0.5, local-epochs 2 and fraction-train 1.0.  So every node trains in both
    rounds (4 of 4), and node 3 sees {rounds 2, fraction-train 1.0, local-epochs 2, lr 0.5} and its node_config
    {partition-id 3, num-partitions 4, data-path data/3.npz, speed 50.0 (a number), fast true}.  The weights:
    FedAvg over equal num-examples adds the mean step, lr x epochs x mean(partition + 1) = 0.5 x 2 x 2.5 = 2.5 a
    round: 5.0 after two rounds."""
    folder, package = app
    argv = ["flower", str(folder), str(tmp_path / "scenario.yaml"), "--quiet", "--out", str(tmp_path / "run")]
    argv += ["--run-config", "lr=0.5 local-epochs=2", "--run-config", "fraction-train=1.0"]
    path_before = list(sys.path)
    assert main(argv) == 0
    assert sys.path == path_before  # the folder was on sys.path for the run only
    seen = sys.modules[f"{package}.client_app"].SEEN
    run_config, node_config = seen[3]
    assert run_config == {"num-server-rounds": 2, "fraction-train": 1.0, "local-epochs": 2, "lr": 0.5}
    assert node_config == {
        "partition-id": 3, "num-partitions": 4, "data-path": "data/3.npz", "speed": 50.0, "fast": True,
    }  # fmt: skip
    assert [seen[i][1]["data-path"] for i in range(4)] == [f"data/{i}.npz" for i in range(4)]
    assert sys.modules[f"{package}.server_app"].RESULT["arrays"].tolist() == [5.0] * 4
    rounds = (tmp_path / "run" / "rounds.csv").read_text().splitlines()
    assert len(rounds) == 3 and [row.split(",")[4] for row in rounds[1:]] == ["4", "4"]  # received: 4 a round


def test_the_app_defaults_apply_where_nothing_overrides_them(app, tmp_path):
    """No scenario run_config, no --run-config: pyproject's 3 rounds of fraction-train 0.5 (2 of the 4 nodes),
    lr 0.01 x 1 epoch."""
    folder, package = app
    (tmp_path / "scenario.yaml").write_text("name: plain\ndata: {clients: 4}\noutput: {plot: false}\n")
    argv = ["flower", str(folder), str(tmp_path / "scenario.yaml"), "--quiet", "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    run_config, node_config = next(iter(sys.modules[f"{package}.client_app"].SEEN.values()))
    assert run_config == {"num-server-rounds": 3, "fraction-train": 0.5, "local-epochs": 1, "lr": 0.01}
    assert set(node_config) == {"partition-id", "num-partitions"}  # what Flower's simulation sets, no more
    rounds = (tmp_path / "run" / "rounds.csv").read_text().splitlines()
    assert len(rounds) == 4 and {row.split(",")[3] for row in rounds[1:]} == {"2"}  # selected: 2 a round


def test_the_python_front_door_takes_app_dir(app, tmp_path):
    import asyncfl.flower

    folder, package = app
    run = asyncfl.flower.run(
        None, None, tmp_path / "scenario.yaml", tmp_path / "run", app_dir=folder, run_config={"lr": 1.0}
    )
    assert run.summary["status"] == "finished" and len(run.rounds) == 2
    assert sys.modules[f"{package}.client_app"].SEEN[0][0]["lr"] == 1.0
