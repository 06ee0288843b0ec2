"""``python -m asyncfl flower APP_DIR SCENARIO.yaml``: every mistake in the app folder, the ``--run-config`` or the
form of the command is one ``error:`` line naming the file and key (or flag) and what is allowed, exit 2, and no
run directory is made."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("flwr")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "flower"))  # the template app's writer
from template_app import write_template_app  # noqa: E402

from asyncfl.cli.main import main  # noqa: E402

SCENARIO = "name: app_dir\ndata: {clients: 2}\noutput: {plot: false}\n"


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    return write_template_app(tmp_path / "app", "never_imported_app")


def _fails(tmp_path, capsys, *args: str) -> str:
    assert main(["flower", *args, "--quiet", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert not (tmp_path / "run").exists()
    return err


def _pyproject(folder: Path, old: str, new: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text(path.read_text().replace(old, new))
    return path


def test_a_folder_without_pyproject(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    err = _fails(tmp_path, capsys, str(tmp_path / "empty"), str(tmp_path / "scenario.yaml"))
    assert f"{tmp_path / 'empty' / 'pyproject.toml'}: no such file" in err and "[tool.flwr.app.components]" in err


def test_a_pyproject_without_components(tmp_path, capsys, folder):
    path = _pyproject(folder, "[tool.flwr.app.components]", "[tool.flwr.app.parts]")
    err = _fails(tmp_path, capsys, str(folder), str(tmp_path / "scenario.yaml"))
    assert f"{path}: no [tool.flwr.app.components] table; allowed: one with serverapp = " in err


def test_a_pyproject_without_clientapp(tmp_path, capsys, folder):
    path = _pyproject(folder, 'clientapp = "never_imported_app.client_app:app"', "")
    err = _fails(tmp_path, capsys, str(folder), str(tmp_path / "scenario.yaml"))
    assert f"{path}: [tool.flwr.app.components] clientapp: missing; allowed: a 'package.module:attribute'" in err


def test_a_component_that_is_no_module_attribute_string(tmp_path, capsys, folder):
    path = _pyproject(folder, '"never_imported_app.server_app:app"', '"server_app"')
    err = _fails(tmp_path, capsys, str(folder), str(tmp_path / "scenario.yaml"))
    assert f"{path}: [tool.flwr.app.components] serverapp: 'server_app' is not a 'package.module:attribute'" in err


def test_a_pyproject_that_is_not_toml(tmp_path, capsys, folder):
    path = _pyproject(folder, "lr = 0.01", "lr = ")
    err = _fails(tmp_path, capsys, str(folder), str(tmp_path / "scenario.yaml"))
    assert f"{path}: not valid TOML (" in err and "at line 26, column 6" in err


def test_a_run_config_key_the_app_does_not_declare(tmp_path, capsys, folder):
    err = _fails(tmp_path, capsys, str(folder), str(tmp_path / "scenario.yaml"), "--run-config", "lr=0.1 epochs=3")
    assert "--run-config: 'epochs' is not a key of " in err and "[tool.flwr.app.config]" in err
    assert "allowed: num-server-rounds, fraction-train, local-epochs, lr" in err


def test_a_scenario_run_config_key_the_app_does_not_declare(tmp_path, capsys, folder):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO + "flower: {run_config: {rounds: 3}}\n")
    err = _fails(tmp_path, capsys, str(folder), str(scenario))
    assert "flower.run_config: 'rounds' is not a key of " in err and "allowed: num-server-rounds," in err


def test_a_run_config_that_is_not_toml(tmp_path, capsys, folder):
    err = _fails(tmp_path, capsys, str(folder), str(tmp_path / "scenario.yaml"), "--run-config", "name=unquoted")
    assert "--run-config 'name=unquoted': The provided configuration string is in an invalid format" in err
    assert "allowed: space-separated key=value pairs with TOML values" in err


def test_an_app_folder_and_app_flags_together(tmp_path, capsys, folder):
    flags = ("--server-app", "never_imported_app.server_app:app")
    err = _fails(tmp_path, capsys, str(folder), str(tmp_path / "scenario.yaml"), *flags)
    assert "--server-app: the app folder " in err and "allowed: an app folder or --server-app and --client-app" in err


def test_an_app_folder_without_a_scenario(tmp_path, capsys, folder):
    err = _fails(tmp_path, capsys, str(folder))
    assert f"{folder}: an app folder, but no scenario follows it; allowed: APP_DIR SCENARIO.yaml" in err


def test_a_scenario_followed_by_another_argument(tmp_path, capsys, folder):
    scenario = str(tmp_path / "scenario.yaml")
    err = _fails(tmp_path, capsys, scenario, scenario)
    assert f"{scenario}: a file, not a folder, yet a second argument" in err and "SCENARIO.yaml alone" in err


def test_a_node_config_placeholder_that_names_nothing(tmp_path, capsys, folder):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO + 'flower: {node_config: {data-path: "data/{client}.npz"}}\n')
    err = _fails(tmp_path, capsys, str(folder), str(scenario))
    assert "flower.node_config: data-path: 'data/{client}.npz' names {client}; allowed: {partition-id}," in err


def test_a_node_config_key_flower_sets_itself(tmp_path, capsys, folder):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO + "flower: {node_config: {partition-id: 7}}\n")
    err = _fails(tmp_path, capsys, str(folder), str(scenario))
    assert "flower.node_config: partition-id: set by the simulation" in err
