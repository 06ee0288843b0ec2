"""``validate`` of a Flower scenario (a ``flower:`` section) loads the apps its run would load -- a module that
does not import, an object of the wrong type, flwr missing: exit 2, one message naming each YAML path -- and
prints only what applies to a Flower run (who aggregates, the nodes, the stop), not asyncfl's algorithm or
local steps."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("flwr")

from asyncfl.cli.main import main  # noqa: E402

APPS = """\
from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp

server_app = ServerApp()
client_app = ClientApp()
not_an_app = 3


def initial_arrays():
    return []
"""
SCENARIO = """\
name: flower_check
data: {{clients: 6}}
stop: {{virtual_time_s: 120}}
flower:
{flower}
"""


@pytest.fixture
def apps_dir(tmp_path, monkeypatch):
    """A folder holding the module ``validate_flower_apps`` (its apps), the working directory as for ``flwr run``."""
    (tmp_path / "validate_flower_apps.py").write_text(APPS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "validate_flower_apps", raising=False)
    return tmp_path


def validate(folder, flower: str, *extra: str) -> int:
    path = folder / "scenario.yaml"
    path.write_text(SCENARIO.format(flower=flower))
    return main(["validate", "scenario.yaml", *extra])


SYNC = "  server_app: validate_flower_apps:server_app\n  client_app: validate_flower_apps:client_app"


def test_a_valid_flower_scenario_prints_the_lines_of_a_flower_run(apps_dir, capsys):
    assert validate(apps_dir, SYNC) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "scenario.yaml: valid (Flower: ServerApp validate_flower_apps:server_app with ClientApp "
        "validate_flower_apps:client_app; 6 nodes (data.clients), availability always)",
        "stop: at 120 virtual seconds, or when the ServerApp returns",
    ]


def test_a_k_async_flower_scenario_names_asyncfls_server_and_the_client_app(apps_dir, capsys):
    flower = "  client_app: validate_flower_apps:client_app\n  initial_arrays: validate_flower_apps:initial_arrays"
    assert (
        validate(apps_dir, flower, "--set", "server.mode=k_async", "--set", "server.k=2", "--set", "stop.rounds=30")
        == 0
    )
    assert capsys.readouterr().out.splitlines() == [
        "scenario.yaml: valid (Flower: asyncfl's k_async server (fedbuff) trains ClientApp "
        "validate_flower_apps:client_app; 6 nodes (data.clients), availability always)",
        "stop: at 30 train rounds or 120 virtual seconds",
    ]


def test_apps_left_to_the_flags_are_said_not_refused(apps_dir, capsys):
    assert validate(apps_dir, "  run_config: {lr: 0.1}") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2:] == [
        "flower.server_app: not named here: give it as --server-app to python -m asyncfl flower scenario.yaml",
        "flower.client_app: not named here: give it as --client-app to python -m asyncfl flower scenario.yaml",
    ]


def test_apps_that_do_not_load_are_each_an_error_naming_the_yaml_path(apps_dir, capsys):
    flower = "  server_app: no_such_module_for_validate:app\n  client_app: validate_flower_apps:not_an_app"
    assert validate(apps_dir, flower) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "error: 2 problem(s):",
        "  flower.server_app: cannot import module 'no_such_module_for_validate' of 'no_such_module_for_validate:app' "
        "(ModuleNotFoundError: No module named 'no_such_module_for_validate'); allowed: an importable module (run "
        "from the app's directory, or put it on PYTHONPATH)",
        "  flower.client_app: 'validate_flower_apps:not_an_app' is of type int, not a flwr.clientapp.ClientApp; "
        "allowed: a flwr.clientapp.ClientApp",
    ]


def test_a_k_async_initial_model_that_is_no_function_is_an_error(apps_dir, capsys):
    flower = "  client_app: validate_flower_apps:client_app\n  initial_arrays: validate_flower_apps:not_an_app"
    assert validate(apps_dir, flower, "--set", "server.mode=k_async", "--set", "server.k=2") == 2
    assert capsys.readouterr().err == (
        "error: flower.initial_arrays: 'validate_flower_apps:not_an_app' names no function; allowed: a function "
        "returning the model's arrays\n"
    )


def test_flwr_missing_is_an_error_with_the_install_command(apps_dir, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "flwr", None)  # import flwr raises ImportError
    assert validate(apps_dir, SYNC) == 2
    assert capsys.readouterr().err == (
        "error: Flower (flwr) is not installed; install it with: pip install 'flwr>=1.42,<2' (or, in a checkout of "
        "asyncfl: pip install -e '.[flower]')\n"
    )
