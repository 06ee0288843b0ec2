"""What the README promises about its own commands: the two commands come first, CI runs the test
command exactly as written inside a brand-new virtual environment (after building the documentation
site strictly), and the command synopsis of the docs names every command the parser has."""

from __future__ import annotations

import re
from pathlib import Path

from asyncfl.cli.main import COMMANDS, _parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
CLI_PAGE = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
RUN_FILES_PAGE = (ROOT / "docs" / "reference" / "run-files.md").read_text(encoding="utf-8")
COMPARE_PAGE = (ROOT / "docs" / "how-to" / "compare.md").read_text(encoding="utf-8")


def _section(title: str, text: str = README) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.DOTALL | re.MULTILINE)
    assert match, f"no '## {title}' section"
    return match.group(1)


def _indented_commands(text: str) -> list[str]:
    return [line[4:] for line in text.splitlines() if line.startswith("    ") and line.strip()]


def test_the_two_commands_are_the_first_section():
    first = re.search(r"^## (.*)$", README, re.MULTILINE)
    assert first and first.group(1) == "Two commands"
    install_and_run, install_and_test = _indented_commands(_section("Two commands"))[:2]
    assert install_and_run == "pip install -e . && python -m asyncfl scenarios/k_async.yaml"
    assert install_and_test.startswith('pip install -e ".[dev]" && python -m pytest')


def test_ci_runs_the_readme_test_command_in_a_new_virtual_environment():
    test_command = _indented_commands(_section("Two commands"))[1]
    lines = [line.strip() for line in CI.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert lines[-1] == test_command  # exactly as a user types it, and last: its status is CI's
    venv = re.search(r'python3? -m venv "\$VENV"', CI)
    assert venv, ".ci/run must build its own virtual environment"
    assert re.search(r'VENV="\$\(mktemp -d\)', CI), "in a new temporary directory, on every run"
    activate = CI.index('source "$VENV/bin/activate"')
    assert venv.start() < activate < CI.index(test_command), "and run the tests inside it"
    for name in ("torch", "numpy", "mnist1d", "pandas", "pydantic", "simpy"):
        assert f'"{name}"' in CI, f".ci/run prints the version of {name} before the tests"


def test_ci_builds_the_documentation_strictly_before_the_tests():
    """A broken link or a missing page fails CI: the site is built with --strict, from the docs extra."""
    lines = [line.strip() for line in CI.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    build = lines.index("mkdocs build --strict")
    install = next(i for i, line in enumerate(lines) if line.startswith("pip install") and ".[docs]" in line)
    assert install < build < len(lines) - 1


def test_the_synopsis_names_every_command():
    synopsis = _indented_commands(_section("Synopsis", CLI_PAGE))
    named = {m.group(1) for line in synopsis if (m := re.match(r"python -m asyncfl (\w+)", line))}
    assert "FILE.yaml" in synopsis[0]  # `run` is the default command
    assert set(COMMANDS) - {"run"} <= named, f"missing from the README synopsis: {set(COMMANDS) - {'run'} - named}"
    subcommands = _parser()._subparsers._group_actions[0].choices  # what argparse really accepts
    assert set(subcommands) == set(COMMANDS)


def test_sweep_paragraph_lists_every_file_of_the_sweep_table():
    table = _section("What a sweep writes", RUN_FILES_PAGE)
    files = re.findall(r"^\| `([^`]+)` \|", table, re.MULTILINE)
    assert "report.csv" in files and "report.md" in files
    paragraph_start = COMPARE_PAGE.index("The layout is the same with either executor")
    paragraph = COMPARE_PAGE[paragraph_start : COMPARE_PAGE.index("\n\n", paragraph_start)]
    for name in files:
        if "/" in name:  # a folder of run directories (tuning/<variant>/...): its top folder is named
            assert f"`{name.split('/')[0]}/`" in paragraph, name
            continue
        stem, ext = name.rsplit(".", 1)
        assert name in paragraph or f"{stem}.csv/.{ext}" in paragraph or f"{stem}.csv/.md" in paragraph, name


def test_the_cpu_only_hint_comes_before_the_first_command():
    """Issue 29, item 28: the first command pulls torch's CUDA build on Linux; a CPU-only user must read
    how to install the CPU build before running it, not after."""
    section = _section("Two commands")
    first_command = section.index("\n    pip install -e . && python -m asyncfl")
    hint = section.index("pip install torch --index-url https://download.pytorch.org/whl/cpu")
    assert hint < first_command


def test_the_test_times_say_what_was_measured_beside_the_fast_subset_command():
    """Issue 29, item 28: the README states where the suite's times were measured, for both the whole
    suite and the fast subset, next to the fast subset's command."""
    section = _section("Tests")
    assert _indented_commands(section) == ["python -m pytest -q", 'python -m pytest -q -m "not slow"']
    measured = r"Measured from a fresh clone on a \d+-core machine: full suite \S+ min, fast subset \S+ min\."
    assert re.search(measured, section)
