"""A ``name`` too long for a directory name is refused when the scenario is validated, naming ``name`` and the
limit, instead of an OSError (ENAMETOOLONG) once the run makes its directory; the longest allowed name still
makes every directory asyncfl derives from it."""

from __future__ import annotations

import pytest

from asyncfl.cli.main import main
from asyncfl.config import Scenario
from asyncfl.config.schema import NAME_MAX_BYTES
from asyncfl.errors import ConfigError
from asyncfl.output.run_directory import new_run_dir


def test_a_name_past_the_limit_is_refused_naming_the_key_and_the_limit():
    assert NAME_MAX_BYTES == 248  # 255 bytes less "_advice" (7)
    with pytest.raises(ConfigError) as raised:
        Scenario.from_dict({"name": "a" * 249, "stop": {"rounds": 1}})
    assert "name: is 249 characters long, too long for a directory name; allowed: at most 248" in str(raised.value)


def test_the_longest_name_makes_the_run_and_advice_directories(tmp_path):
    name = Scenario.from_dict({"name": "a" * 248, "stop": {"rounds": 1}}).name
    for component in (name, f"{name}_advice"):  # the run's directory, advise's
        assert new_run_dir(tmp_path, component).parent == tmp_path / component


def test_the_command_line_refuses_it_with_exit_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(f"name: {'n' * 300}\nstop: {{rounds: 1}}\noutput: {{dir: runs}}\n")
    assert main(["s.yaml", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: s.yaml: 1 problem(s):\n  name: is 300 characters long") and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
