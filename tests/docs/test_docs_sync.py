"""Every documentation block that quotes a generated file or the code must equal its source
(benchmarks/tools/docs_sync.py), in README.md and in every hand-written page of docs/."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("docs_sync", ROOT / "benchmarks" / "tools" / "docs_sync.py")
docs_sync = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_sync)


def test_every_block_matches_its_source():
    assert docs_sync.problems() == []


def test_the_pages_checked_are_the_readme_and_the_written_docs_not_the_generated_files():
    names = {p.relative_to(ROOT).as_posix() for p in docs_sync.pages()}
    assert {"README.md", "docs/index.md", "docs/findings/papers.md", "docs/reference/cli.md"} <= names
    assert not any(n.startswith(("docs/figures/", "docs/results/")) for n in names)


def test_the_generated_pages_hold_their_blocks():
    """The command line and the run files' columns are generated, not written by hand."""
    assert "<!-- generated: cli -->" in (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    run_files = (ROOT / "docs" / "reference" / "run-files.md").read_text(encoding="utf-8")
    assert "<!-- generated: run-columns -->" in run_files


def test_check_catches_a_stale_and_a_missing_block(tmp_path, monkeypatch):
    (tmp_path / "table.md").write_text("| a | 1 |\n")
    page = tmp_path / "page.md"
    page.write_text(
        "x\n<!-- include: table.md -->\n| a | 2 |\n<!-- /include -->\n"
        "<!-- include: gone.md -->\nold\n<!-- /include -->\n"
    )
    monkeypatch.setattr(docs_sync, "ROOT", tmp_path)
    found = docs_sync.problems(page)
    assert len(found) == 2 and "table.md is stale" in found[0] and "gone.md" in found[1]
    (tmp_path / "gone.md").write_text("new")
    assert docs_sync.sync(page) == 2
    assert docs_sync.problems(page) == []
    assert "| a | 1 |\n<!-- /include -->" in page.read_text()


def test_check_catches_a_stale_and_an_unknown_generated_block(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- generated: cli -->\nold\n<!-- /generated -->\n<!-- generated: nothing -->\n<!-- /generated -->\n"
    )
    found = docs_sync.problems(page)
    assert len(found) == 2 and "cli is stale" in found[0] and "'nothing' has no generator" in found[1]
    monkeypatch.setitem(docs_sync.GENERATORS, "nothing", lambda: "made")
    assert docs_sync.sync(page) == 2 and docs_sync.problems(page) == []


def test_the_cli_reference_names_every_option_of_every_command():
    """Hand-computed from the parser: every option string appears in the generated text."""
    from asyncfl.cli.main import COMMANDS, _parser

    text = docs_sync.cli_markdown()
    subparsers = _parser()._subparsers._group_actions[0].choices
    for name in COMMANDS:
        assert f"### `{name}`" in text
        for action in subparsers[name]._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in text, (name, option)
    assert "#### `traces convert`" in text and "`--from` {fedscale-capacity,fedscale-behavior,flash}" in text
    assert "`--clients` N\\|ID,ID,..." in text  # a pipe in a metavar is escaped for the table


def test_the_column_reference_lists_every_declared_column():
    from asyncfl.output import columns

    text = docs_sync.run_columns_markdown()
    for table in (columns.METRICS, columns.ROUNDS, columns.ROUND_TIME, columns.UPDATES, columns.TASKS,
                  columns.OFFLINE, columns.CLIENTS, columns.TIME_BREAKDOWN, columns.WEIGHTS):  # fmt: skip
        for column in table:
            assert f"| `{column}` |" in text, column
    assert "| `utc_offset_h` | the client's time zone (population.timezones) | with the setting named |" in text
