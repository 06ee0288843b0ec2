"""Keep every number and table the documentation quotes equal to the place it comes from.

Two kinds of block, in README.md and in every page of docs/ (docs/figures/ and docs/results/ hold
the generated files themselves and are not scanned):

    <!-- include: docs/figures/some_table.md -->
    ...copied text...
    <!-- /include -->

holds exactly the content of the named file (path relative to the repository root). The scripts in
`benchmarks/experiments/` and `benchmarks/performance/` write those files (into docs/results/ and
docs/figures/) from the current code.

    <!-- generated: cli -->
    ...
    <!-- /generated -->

holds what a generator below makes from the code itself: `cli`, every command's arguments read from
the argparse parser (asyncfl/cli/main.py); `run-columns`, every column of the run files from the one
place they are declared (asyncfl/output/columns.py). The scenario keys have their own block,
written by `python -m asyncfl reference --update docs/reference/scenario-keys.md`.

    python benchmarks/tools/docs_sync.py            # rewrite every block from its source
    python benchmarks/tools/docs_sync.py --check    # exit 1, naming each stale or broken block

tests/docs/test_docs_sync.py runs the check, so a quoted number that no longer matches its source file, or
a command-line option missing from the reference, fails the suite.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- include: (?P<path>[^ ]+) -->\n(?P<body>.*?)<!-- /include -->", re.DOTALL)
GENERATED = re.compile(r"<!-- generated: (?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /generated -->", re.DOTALL)
GENERATED_DIRS = ("figures", "results")  # docs/ folders the benchmark scripts write into
# pages whose include blocks show files their own generator's run wrote (benchmarks/tools/make_tutorial.py)
OWN_GENERATOR = ("tutorial.md",)


def pages() -> list[Path]:
    """README.md and every hand-written page of docs/ (the tutorial's blocks are make_tutorial.py's)."""
    docs = ROOT / "docs"
    written = [
        p
        for p in sorted(docs.rglob("*.md"))
        if p.relative_to(docs).parts[0] not in GENERATED_DIRS and p.relative_to(docs).as_posix() not in OWN_GENERATOR
    ]
    return [ROOT / "README.md", *written]


def _source_text(path: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    return text if text.endswith("\n") else text + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest.upper()}`" + (" ..." if action.nargs in ("+", "*") else "")
    takes_value = action.nargs != 0
    metavar = action.metavar or (("{" + ",".join(action.choices) + "}") if action.choices else action.dest.upper())
    # the metavar stays out of the code span: a "|" in it (N|ID,...) must be escaped in a table, and an escape
    # inside a code span shows on the site
    return ", ".join(f"`{option}`{' ' + metavar if takes_value else ''}" for option in action.option_strings)


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        meaning = (action.help or "").replace("%%", "%")
        if action.choices and action.option_strings:
            meaning += f" (one of {', '.join(f'`{c}`' for c in action.choices)})"
        if action.required and action.option_strings:
            meaning += " (required)"
        if action.option_strings and action.dest != "overrides" and action.default not in (None, False, []):
            if f"default {action.default}" not in meaning and "default" not in meaning:
                meaning += f" (default `{action.default}`)"
        if action.dest == "overrides":
            meaning = meaning or "override a scenario key, e.g. --set server.k=5 (repeatable)"
        rows.append(f"| {_cell(_argument(action))} | {_cell(meaning.strip())} |")
    return ["| argument | meaning |", "| --- | --- |", *rows] if rows else []


def cli_markdown() -> str:
    """One section per command of the parser, each with its arguments."""
    from asyncfl.cli.main import COMMANDS, _parser

    commands = _parser()._subparsers._group_actions[0]
    helps = {choice.dest: choice.help for choice in commands._choices_actions}
    lines = []
    for name in COMMANDS:
        sub = commands.choices[name]
        lines += [f"### `{name}`", "", (helps.get(name) or "").replace("%%", "%") + "."]
        lines += ["", *_arguments_table(sub)] if _arguments_table(sub) else []
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        for group in nested:
            nested_helps = {choice.dest: choice.help for choice in group._choices_actions}
            for inner, parser in group.choices.items():
                lines += ["", f"#### `{name} {inner}`", "", (nested_helps.get(inner) or "") + ".", ""]
                lines += _arguments_table(parser)
        lines.append("")
    return "\n".join(lines)


def run_columns_markdown() -> str:
    """Every run file's columns with their meanings, from asyncfl/output/columns.py."""
    from asyncfl.output import columns as c

    optional = {id(group) for group in (c.METRICS_OPTIONAL, c.ROUNDS_OPTIONAL, c.CLIENTS_OPTIONAL)}
    files = (
        ("metrics.csv", [c.METRICS, c.METRICS_OPTIONAL]),
        ("rounds.csv", [c.ROUNDS, c.ROUND_TIME, c.ROUNDS_OPTIONAL]),
        ("updates.csv", [c.UPDATES]),
        ("timeline_tasks.csv", [c.TASKS]),
        ("offline_periods.csv", [c.OFFLINE]),
        ("clients.csv", [c.CLIENTS, c.TIME_BREAKDOWN, c.CLIENTS_OPTIONAL]),
        ("weights.csv", [c.WEIGHTS]),
    )
    lines = []
    for name, groups in files:
        lines += [f"### `{name}`", "", "| column | meaning | written |", "| --- | --- | --- |"]
        for group in groups:
            written = "with the setting named" if id(group) in optional else "always"
            lines += [f"| `{column}` | {_cell(meaning)} | {written} |" for column, meaning in group.items()]
        lines.append("")
    return "\n".join(lines)


GENERATORS: dict[str, Callable[[], str]] = {"cli": cli_markdown, "run-columns": run_columns_markdown}


def _generated_text(name: str) -> str:
    text = GENERATORS[name]()
    return text if text.endswith("\n") else text + "\n"


def problems(page: Path | None = None) -> list[str]:
    """Each block whose source is missing or whose text differs from its source, as one line."""
    found = []
    for path in [page] if page is not None else pages():
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            source = match["path"]
            if not (ROOT / source).is_file():
                found.append(f"{path.name}: block includes {source}, which does not exist")
            elif match["body"] != _source_text(source):
                found.append(f"{path.name}: block from {source} is stale (run python benchmarks/tools/docs_sync.py)")
        for match in GENERATED.finditer(text):
            name = match["name"]
            if name not in GENERATORS:
                found.append(f"{path.name}: generated block {name!r} has no generator (known: {sorted(GENERATORS)})")
            elif match["body"] != _generated_text(name):
                found.append(f"{path.name}: generated block {name} is stale (run python benchmarks/tools/docs_sync.py)")
    return found


def sync(page: Path | None = None) -> int:
    """Rewrite every block from its source; return how many blocks changed."""
    changed = 0

    def include(match: re.Match) -> str:
        nonlocal changed
        body = _source_text(match["path"])
        changed += body != match["body"]
        return f"<!-- include: {match['path']} -->\n{body}<!-- /include -->"

    def generate(match: re.Match) -> str:
        nonlocal changed
        body = _generated_text(match["name"])
        changed += body != match["body"]
        return f"<!-- generated: {match['name']} -->\n{body}<!-- /generated -->"

    for path in [page] if page is not None else pages():
        text = path.read_text(encoding="utf-8")
        new = GENERATED.sub(generate, BLOCK.sub(include, text))
        if new != text:
            path.write_text(new, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale blocks instead of rewriting them")
    args = parser.parse_args(argv)
    if args.check:
        found = problems()
        print("\n".join(found) if found else "every documentation block matches its source")
        return 1 if found else 0
    print(f"{sync()} block(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
