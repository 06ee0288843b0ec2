"""The Python API's arguments are checked before anything runs or is written, each error naming the argument
and what it takes: ``out`` / ``out_dir`` not a path, ``overrides`` one str, ``callbacks`` one Callback, and
``asyncfl.flower.run``'s ``run_config`` not a flat mapping (flwr's run config holds bool, int, float, str)."""

from __future__ import annotations

import pytest

import asyncfl
from asyncfl.errors import ConfigError
from asyncfl.runner.callbacks.base import Callback

SCENARIO = {"data": {"clients": 2}, "stop": {"rounds": 1}, "output": {"plot": False}}


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: asyncfl.run(SCENARIO, out=3), "out: expected a path (str or os.PathLike), got int 3."),
        (lambda: asyncfl.run_study({**SCENARIO, "seeds": [0]}, out=2.5), "out: expected a path (str or os.PathLike)"),
    ],
)
def test_an_output_directory_that_is_no_path_names_the_argument(tmp_path, monkeypatch, call, expected):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as raised:
        call()
    assert str(raised.value).startswith(expected)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_one_callback_is_refused_naming_callbacks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError) as raised:
        asyncfl.run(SCENARIO, callbacks=Callback())
    assert str(raised.value) == (
        "callbacks: expected a list of asyncfl.Callback objects, got Callback; wrap one callback in a list: "
        "callbacks=[callback]"
    )
    assert list(tmp_path.iterdir()) == []


class TestFlowerRun:
    @pytest.fixture(autouse=True)
    def _flwr(self, tmp_path, monkeypatch):
        pytest.importorskip("flwr")
        monkeypatch.chdir(tmp_path)
        yield
        assert list(tmp_path.iterdir()) == []  # every call refused before writing

    def refused(self, **arguments) -> str:
        import asyncfl.flower

        with pytest.raises(ConfigError) as raised:
            asyncfl.flower.run(None, None, SCENARIO, **arguments)
        return str(raised.value)

    def test_a_run_config_that_is_no_mapping(self):
        assert self.refused(run_config="a=1") == (
            "run_config: expected a mapping, got str 'a=1'; allowed: a dict of str keys to bool, int, float or str "
            "values, e.g. {'num-server-rounds': 3}."
        )

    def test_a_nested_run_config_value(self):
        assert self.refused(run_config={"lr": 0.1, "opt": {"m": 0.9}}).startswith(
            "run_config['opt']: dict {'m': 0.9} is no Flower run-config value (they are flat: no nested mapping or "
            "list); allowed: a dict of str keys to bool, int, float or str values"
        )

    def test_overrides_given_as_one_str(self):
        assert self.refused(overrides="seed=3") == (
            "overrides must be a list of 'key=value' strings such as ['server.k=5'], got str 'seed=3': wrap it in "
            "a list, ['seed=3']."
        )

    def test_an_out_dir_that_is_no_path(self):
        assert self.refused(out_dir=3) == "out_dir: expected a path (str or os.PathLike), got int 3."
