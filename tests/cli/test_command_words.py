"""A word that is no command and no file (``study --help``) is refused naming the commands, not answered with
``run``'s help; the ``flower`` command given a study file says how a study runs."""

from __future__ import annotations

import pytest

from asyncfl.cli.main import main


def test_an_unknown_command_word_names_the_commands_not_runs_help(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["study", "--help"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # not run's usage
    assert captured.err == (
        "error: unknown command 'study'; allowed: run, validate, plot, compare, report, reference, traces, advise, "
        "flower, or a scenario or study file (python -m asyncfl FILE.yaml runs either)\n"
    )


def test_a_file_named_like_a_word_still_runs(tmp_path, monkeypatch, capsys):
    """A file called ``study`` in the working directory is a FILE to run (here: a study, validated)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "study").write_text("data: {clients: 2}\nstop: {rounds: 1}\nseeds: [0, 1]\n")
    assert main(["validate", "study"]) == 0
    with pytest.raises(SystemExit) as exited:
        main(["study", "--help"])  # run's help, for `run study`
    assert exited.value.code == 0
    assert "usage: python -m asyncfl run" in capsys.readouterr().out


def test_the_flower_command_given_a_study_points_to_running_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "study.yaml").write_text("data: {clients: 2}\nstop: {rounds: 1}\nseeds: [0, 1]\n")
    (tmp_path / "one.yaml").write_text("data: {clients: 2}\nstop: {rounds: 1}\n")
    assert main(["flower", "study.yaml"]) == 2
    assert capsys.readouterr().err == (
        "error: study.yaml: this is a study (compare: / seeds:); the flower command runs one scenario. Run the "
        "study with: python -m asyncfl study.yaml (its variants run the apps their flower: section names; "
        "--server-app / --client-app do not apply)\n"
    )
    assert main(["flower", "one.yaml", "--set", "seeds=[0, 1]"]) == 2  # a study by its --set
    assert "Run the study with: python -m asyncfl one.yaml '--set=seeds=[0, 1]' (" in capsys.readouterr().err
