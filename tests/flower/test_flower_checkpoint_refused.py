"""A Flower ServerApp scenario's ``checkpoint:`` section is refused, not ignored: such a run cannot be checkpointed
(its state is the ServerApp's strategy and loop, user code on its own stack asyncfl can neither save nor restore).
The section at its defaults (absent) or saying never (``every_rounds: null``) is accepted; anything that asks for a
save is one ConfigError naming ``checkpoint``, why, and what is allowed: exit 2 from ``validate`` and ``flower``,
nothing written.  A K-async Flower run (asyncfl's server) checkpoints (test_k_async_flower_resume.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402,F401  (tests/flower is on sys.path; imported so the apps are found in-process)

from asyncfl.cli.main import main  # noqa: E402
from asyncfl.config.schema import Scenario  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402

FLOWER = {"server_app": "toy_app:server_app", "client_app": "toy_app:client_app"}
WHY = "checkpoint ({'every_rounds': 3, 'every_virtual_s': None, 'min_wall_s': 30.0}): a Flower run with a ServerApp "
ALLOWED = (
    "allowed: no checkpoint section, checkpoint: {every_rounds: null} (never), or server.mode: k_async (asyncfl's "
    "server: checkpointed and resumed with python -m asyncfl flower --resume RUN_DIR)"
)


@pytest.mark.parametrize(
    "checkpoint",
    [{"every_rounds": 3}, {"every_virtual_s": 60}, {"min_wall_s": 0}, {"every_rounds": 2, "every_virtual_s": 5}],
)
def test_a_checkpoint_that_would_save_is_refused(checkpoint):
    with pytest.raises(ConfigError) as caught:
        Scenario.from_dict({"flower": FLOWER, "checkpoint": checkpoint})
    message = str(caught.value)
    assert "checkpoint (" in message and "a Flower run with a ServerApp cannot be checkpointed" in message
    assert "your ServerApp's strategy and loop, user code on its own stack" in message
    assert ALLOWED in message


@pytest.mark.parametrize("checkpoint", [None, {"every_rounds": 10}, {"every_rounds": None}])
def test_the_defaults_and_never_are_accepted(checkpoint):
    keys = {"flower": FLOWER} if checkpoint is None else {"flower": FLOWER, "checkpoint": checkpoint}
    assert Scenario.from_dict(keys).flower is not None


def test_a_k_async_flower_scenario_keeps_its_checkpoint():
    keys = {"flower": {"client_app": "toy_app:client_app", "initial_arrays": "x:arrays"}, "server": {"mode": "k_async"}}
    assert Scenario.from_dict({**keys, "checkpoint": {"every_rounds": 3}}).checkpoint.every_rounds == 3


def test_a_native_scenario_keeps_its_checkpoint():
    assert Scenario.from_dict({"checkpoint": {"every_rounds": 3}}).checkpoint.every_rounds == 3


SCENARIO = """\
name: toy
data: {clients: 4}
output: {plot: false}
checkpoint: {every_rounds: 3}
flower:
  server_app: toy_app:server_app
  client_app: toy_app:client_app
  run_config: {num-server-rounds: 2}
"""


@pytest.mark.parametrize("command", [["validate"], ["flower", "--quiet"]])
def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path: Path, capsys, command):
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO)
    out = tmp_path / "run"
    args = [command[0], str(path), *command[1:]] + (["--out", str(out)] if command[0] == "flower" else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert WHY in err and ALLOWED in err
    assert "Traceback" not in err
    assert not out.exists()
