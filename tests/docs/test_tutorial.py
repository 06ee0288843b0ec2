"""docs/tutorial.md runs as shown: every file it writes is written, every command it shows is run and prints
what the page says (benchmarks/tools/make_tutorial.py holds the rules; `--check` there is the slow test here)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from asyncfl.config import read_scenario, validate_scenario
from asyncfl.study import build_study

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_tutorial", ROOT / "benchmarks" / "tools" / "make_tutorial.py")
make_tutorial = importlib.util.module_from_spec(_spec)
sys.modules["make_tutorial"] = make_tutorial  # its dataclasses look their module up there
_spec.loader.exec_module(make_tutorial)
Command = make_tutorial.Command
MARKDOWN = make_tutorial.TUTORIAL.read_text(encoding="utf-8")

SMALL = """Intro.

```yaml title="sub/a.yaml"
x: 1
```

```console
$ cat sub/a.yaml
x: 1
$ echo 0.25 higher
0.25 higher
```

<!-- output: numbers vary by machine -->
```console
$ echo 'acc  0.91' && \\
  echo done
acc  0.91
done
```

The file, rendered:

<!-- include: sub/a.yaml -->
x: 1
<!-- /include -->
"""


def test_blocks_are_files_or_commands_with_their_shown_output():
    files, exact, varying = make_tutorial.blocks(SMALL)
    assert (files.title, files.body, files.lang) == ("sub/a.yaml", "x: 1\n", "yaml")
    assert exact.exact and not varying.exact
    assert make_tutorial.commands(exact) == [
        Command("cat sub/a.yaml", "x: 1\n"),
        Command("echo 0.25 higher", "0.25 higher\n"),
    ]
    assert make_tutorial.commands(varying) == [Command("echo 'acc  0.91' && \\\n  echo done", "acc  0.91\ndone\n")]
    (include,) = make_tutorial.includes(SMALL)
    assert (include.title, include.body, include.exact) == ("sub/a.yaml", "x: 1\n", True)
    assert make_tutorial.shown(SMALL) == [exact, varying, include]


@pytest.mark.parametrize(
    "markdown, problem",
    [
        ("```python\nprint(1)\n```\n", "neither a file"),  # would go unexecuted
        ("```\nplain\n```\n", "neither a file"),
        ("!!! note\n    ```console\n    $ true\n    ```\n", "line 2: an indented fence"),
        ("```console\nno prompt\n```\n", "must start with '$ COMMAND'"),
    ],
)
def test_a_block_that_would_not_be_executed_is_refused(markdown, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        for block in make_tutorial.blocks(markdown):
            make_tutorial.commands(block)


def test_masking_keeps_the_words_and_drops_numbers_and_the_verdicts_drawn_from_them():
    row = "| fedbuff | time to 0.8 (virtual s) | 5/5 | 33.5 ± 19.8 | -106.8 ± 56.7 | 5 | no difference |"
    assert make_tutorial.mask(row) == "| fedbuff | time to # (virtual s) | #/# | # ± # | # ± # | # | <verdict> |"
    assert make_tutorial.mask("1,584 and 1e-05  higher") == "# and # <verdict>"
    assert make_tutorial.mask("baseline") == "baseline"
    assert make_tutorial.mask("variant   n  \nfedbuff  12\n") == "variant n\nfedbuff #\n"  # pandas padding


def test_differences_compare_exactly_unless_numbers_vary():
    files, exact, varying = make_tutorial.blocks(SMALL)
    (include,) = make_tutorial.includes(SMALL)
    as_shown = {
        exact.start: ["x: 1\n", "0.25 higher\n"],
        varying.start: ["acc  0.91\ndone\n"],
        include.start: ["x: 1\n"],
    }
    assert make_tutorial.differences(SMALL, as_shown) == []
    other_numbers = {
        exact.start: ["x: 2\n", "0.25 higher\n"],
        varying.start: ["acc 0.875\ndone\n"],
        include.start: ["x: 2\n"],
    }
    found = make_tutorial.differences(SMALL, other_numbers)  # the exact block and the include, not the varying block
    assert found == [
        "line 8: `cat sub/a.yaml` printed\nx: 2\ninstead of\nx: 1\n",
        "line 25: `include sub/a.yaml` printed\nx: 2\ninstead of\nx: 1\n",
    ]
    other_words = {
        exact.start: ["x: 1\n", "0.25 higher\n"],
        varying.start: ["loss 0.91\ndone\n"],
        include.start: ["x: 1\n"],
    }
    assert len(make_tutorial.differences(SMALL, other_words)) == 1


def test_the_run_writes_files_runs_commands_in_order_and_render_shows_what_they_printed(tmp_path):
    edited = SMALL.replace("x: 1\n```", "x: 3\n```", 1)  # the file changes, its shown output not yet
    produced = make_tutorial.run_tutorial(edited, tmp_path)
    assert (tmp_path / "sub" / "a.yaml").read_text() == "x: 3\n"
    assert list(produced.values()) == [["x: 3\n", "0.25 higher\n"], ["acc  0.91\ndone\n"], ["x: 3\n"]]
    rendered = make_tutorial.render(edited, produced)
    expected = edited.replace("$ cat sub/a.yaml\nx: 1\n", "$ cat sub/a.yaml\nx: 3\n")
    assert rendered == expected.replace("a.yaml -->\nx: 1\n", "a.yaml -->\nx: 3\n")
    assert make_tutorial.differences(rendered, make_tutorial.run_tutorial(rendered, tmp_path / "again")) == []


def test_a_failing_command_stops_the_run(tmp_path):
    with pytest.raises(RuntimeError, match=re.escape("`python -c 'import sys; sys.exit(4)'` exited with 4")):
        make_tutorial.run_tutorial("```console\n$ python -c 'import sys; sys.exit(4)'\n```\n", tmp_path)


def test_the_tutorial_shows_every_figure_its_commands_draw_and_only_those():
    shown = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", MARKDOWN)
    assert sorted(shown) == sorted(f"figures/{name}" for name in make_tutorial.FIGURES.values())
    for name in make_tutorial.FIGURES.values():
        assert (ROOT / "docs" / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_the_tutorial_scenario_and_study_are_valid(tmp_path):
    """The quick part of the slow test below: the files the page writes validate (no run)."""
    written = {b.title: b.body for b in make_tutorial.blocks(MARKDOWN) if b.title}
    assert set(written) == {"stragglers.yaml", "study_keys.yaml", "by_tier.py"}
    for name, body in written.items():
        (tmp_path / name).write_text(body)
    scenario = validate_scenario(read_scenario(tmp_path / "stragglers.yaml"), source="stragglers.yaml")
    assert (scenario.server.mode, scenario.data.clients) == ("sync", 20)
    (tmp_path / "study.yaml").write_text(written["stragglers.yaml"] + written["study_keys.yaml"])  # as `cat` does
    study = build_study(read_scenario(tmp_path / "study.yaml"), source="study.yaml")
    assert study.variants == ("wait_for_all", "deadline_8s", "fedbuff") and len(study.runs) == 15
    run_figures = [source.split("/") for source in make_tutorial.FIGURES if source.count("/") == 3]
    assert run_figures and {variant for _, variant, _, _ in run_figures} <= set(study.variants)


@pytest.mark.slow
def test_the_tutorial_runs_as_shown(tmp_path):
    produced = make_tutorial.run_tutorial(MARKDOWN, tmp_path)
    assert sorted(produced) == [b.start for b in make_tutorial.shown(MARKDOWN)]  # every console block and include
    found = make_tutorial.differences(MARKDOWN, produced)
    assert not found, "run `python benchmarks/tools/make_tutorial.py` if the change is intended:\n" + "\n".join(found)
    for source in make_tutorial.FIGURES:
        assert (tmp_path / source).stat().st_size > 0, source
