"""Names become directories: a scenario's ``name`` (output.dir/<name>/) and a study variant's name
(<sweep>/<variant>/) must each be one plain directory name, so that no run escapes its directory."""

from __future__ import annotations

import subprocess
import sys

import pytest

from asyncfl.config import ConfigError, validate_scenario
from asyncfl.study import build_study

BASE = {
    "data": {"dataset": "digits", "clients": 4},
    "model": {"name": "logreg"},
    "training": {"local_steps": 1},
    "stop": {"rounds": 1},
    "output": {"plot": False},
}
ESCAPING = ["..", ".", "a/b", "../x", "", "a\n", "a\x00b", "/abs"]


@pytest.mark.parametrize("name", ESCAPING)
def test_a_scenario_name_that_is_not_a_plain_directory_name_is_refused(name):
    with pytest.raises(ConfigError) as err:
        validate_scenario({**BASE, "name": name}, source="s.yaml")
    text = str(err.value)
    assert "name: must be a plain directory name" in text and "not '.' or '..'" in text, text


@pytest.mark.parametrize("name", ["tiny", "a.b", "run-1_x", "..."])
def test_plain_names_are_accepted(name):
    assert validate_scenario({**BASE, "name": name}, source="s.yaml").name == name


@pytest.mark.parametrize("name", ESCAPING)
def test_a_variant_name_that_is_not_a_plain_directory_name_is_refused(tmp_path, name):
    raw = {**BASE, "output": {"plot": False, "dir": str(tmp_path)}, "seeds": [0]}
    raw["compare"] = [{"name": "ok"}, {"name": name}]
    with pytest.raises(ConfigError) as err:
        build_study(raw, source="s.yaml")
    text = str(err.value)
    assert "compare[1].name: required, must be a plain directory name" in text and repr(name) in text, text
    assert "compare[0]" not in text


def test_a_run_named_dot_dot_writes_nothing_outside_its_output_dir(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    scenario = work / "s.yaml"
    scenario.write_text('name: ".."\ndata: {dataset: digits, clients: 4}\nmodel: {name: logreg}\n'
                        "stop: {rounds: 1}\noutput: {plot: false, dir: out}\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "asyncfl", str(scenario), "--quiet"], cwd=work,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{scenario}: 1 problem(s)" in done.stderr and "name: must be a plain directory name" in done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["s.yaml"]  # no run directory in the working directory
