"""Run every block of docs/tutorial.md and write what its commands print back into it.

The tutorial's fenced blocks (fences at the start of a line) are of three kinds, and any other is refused,
so nothing in the tutorial goes unexecuted:

    ```yaml title="stragglers.yaml"     any block with a title: its text is written to that file
    ```console                          "$ COMMAND" lines are run with bash; the lines after one, up to the
                                        next "$ ", are what it printed (stdout and stderr, as a terminal shows)
    ```bash                             every line is run with bash; nothing shown, the status must be 0

and a file the commands wrote can be shown rendered (a Markdown table reads better on the page than in a
console block), between two comments:

    <!-- include: advice/advice.md -->
    ...the file's text, after every block has run...
    <!-- /include -->

Blocks run in order in one empty working directory, where `python` is this interpreter and this
checkout comes first on the import path. A console block's shown output is compared exactly, unless the
line before its opening fence is OUTPUT_VARIES: then numbers, and the verdicts drawn from them, are masked
before comparing (accuracies come from floating-point training, which can differ in the last bits across
CPUs and BLAS builds, while the timing world - `validate`, `advise` - is exact on every machine). An include
is compared the same way, masked when it reads `<!-- include: PATH, numbers vary by machine -->`.
FIGURES names the files the run draws that the tutorial shows; they are copied to docs/figures/.

    python benchmarks/tools/make_tutorial.py           # run, rewrite the outputs in place, copy the figures
    python benchmarks/tools/make_tutorial.py --check   # run, exit 1 naming each output that differs

tests/docs/test_tutorial.py runs the check.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
FIGURES_DIR = ROOT / "docs" / "figures"
OUTPUT_VARIES = "<!-- output: numbers vary by machine -->"
FIGURES = {  # file the tutorial's commands write (in the working directory) -> its copy in docs/figures/
    "advice/advice.png": "tutorial_advice.png",
    "study/accuracy_vs_time.png": "tutorial_accuracy_vs_time.png",
    "study/wait_for_all/seed0/timeline.png": "tutorial_timeline_wait_for_all.png",
    "study/deadline_8s/seed0/timeline.png": "tutorial_timeline_deadline.png",
    "study/deadline_8s/seed0/participation.png": "tutorial_participation_deadline.png",
}
INCLUDE = re.compile(
    r"^<!-- include: (?P<path>[^ ,]+)(?P<varies>, numbers vary by machine)? -->\n(?P<body>.*?)^<!-- /include -->$",
    re.DOTALL | re.MULTILINE,
)
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
TITLE = re.compile(r'title="(?P<title>[^"]+)"')
SPACES = re.compile(r" +")
TRAILING = re.compile(r" +$", re.MULTILINE)
VERDICT = re.compile(r"\b(?:higher|lower|no difference|mixed)\b")
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
TIMEOUT_S = 600


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its title (a file name) if any, its text and where the text sits."""

    lang: str
    title: str | None
    body: str
    start: int  # offset of the body in the markdown
    end: int
    exact: bool  # console output compared as is (else with numbers masked)


@dataclass(frozen=True)
class Command:
    command: str
    shown: str  # the output the tutorial shows, "" when none


def blocks(markdown: str) -> list[Block]:
    """Every fenced block, in order; ValueError for a kind this script cannot execute."""
    indented = re.search(r"^[ \t]+```", markdown, re.MULTILINE)
    if indented:
        line = markdown.count("\n", 0, indented.start()) + 1
        raise ValueError(f"line {line}: an indented fence (in an admonition or list) is not executed; unindent it")
    found = []
    for match in FENCE.finditer(markdown):
        info = match["info"].strip()
        lang = info.split()[0] if info else ""
        title = TITLE.search(info)
        if title is None and lang not in ("console", "bash"):
            line = markdown.count("\n", 0, match.start()) + 1
            raise ValueError(f"line {line}: ```{info} is neither a file (title=...) nor ```console / ```bash")
        before = markdown[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found.append(
            Block(lang, title["title"] if title else None, match["body"], match.start("body"), match.end("body"),
                  exact=before.strip() != OUTPUT_VARIES)
        )  # fmt: skip
    return found


def includes(markdown: str) -> list[Block]:
    """Every include of a file the commands wrote (lang "include", title: its path in the working directory)."""
    return [
        Block("include", m["path"], m["body"], m.start("body"), m.end("body"), exact=m["varies"] is None)
        for m in INCLUDE.finditer(markdown)
    ]


def shown(markdown: str) -> list[Block]:
    """The console blocks and includes, whose text is produced, in page order."""
    return sorted([b for b in blocks(markdown) if b.lang == "console"] + includes(markdown), key=lambda b: b.start)


def commands(block: Block) -> list[Command]:
    """The commands of a console block with the output shown after each (a bash block: every line, none shown)."""
    lines = block.body.splitlines()
    if block.lang == "bash":
        return [Command(line, "") for line in lines if line.strip() and not line.lstrip().startswith("#")]
    found: list[list] = []
    for line in lines:
        if line.startswith("$ "):
            found.append([line[2:], []])
        elif found and found[-1][0].endswith("\\") and not found[-1][1]:
            found[-1][0] += "\n" + line  # a command continued on the next line
        elif found:
            found[-1][1].append(line)
        else:
            raise ValueError(f"a console block must start with '$ COMMAND', not {line!r}")
    return [Command(command, "".join(out + "\n" for out in output)) for command, output in found]


def run_command(command: str, workdir: Path, bin_dir: Path) -> str:
    """Run one command as a user would in ``workdir``; its stdout and stderr together. Fails on a non-zero status."""
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "MPLBACKEND": "Agg"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    result = subprocess.run(
        ["bash", "-c", command], cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"`{command}` exited with {result.returncode}:\n{result.stdout}")
    return result.stdout


def run_tutorial(markdown: str, workdir: Path) -> dict[int, list[str]]:
    """Execute every block in ``workdir``; per console block (by its start offset), what each command printed."""
    bin_dir = workdir / ".bin"  # `python` is this interpreter, whatever the PATH says
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # not a link: a venv knows itself by its path
    python.chmod(0o755)
    produced = {}
    for block in blocks(markdown):
        if block.title is not None:
            target = workdir / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body, encoding="utf-8")
            continue
        printed = [run_command(c.command, workdir, bin_dir) for c in commands(block)]
        if block.lang == "console":
            produced[block.start] = printed
    for include in includes(markdown):
        produced[include.start] = [(workdir / include.title).read_text(encoding="utf-8")]
    return produced


def render(markdown: str, produced: dict[int, list[str]]) -> str:
    """``markdown`` with every console block's shown output replaced by what its command printed, and every
    include by the file's text."""
    pieces, last = [], 0
    for block in shown(markdown):
        if block.start not in produced:
            continue
        if block.lang == "include":
            body = produced[block.start][0]
        else:
            body = "".join(f"$ {c.command}\n{out}" for c, out in zip(commands(block), produced[block.start]))
        pieces += [markdown[last : block.start], body]
        last = block.end
    return "".join(pieces) + markdown[last:]


def mask(text: str) -> str:
    """What is compared where numbers vary by machine: every number replaced by '#', every verdict drawn
    from numbers (the report's vs_baseline) by '<verdict>', every run of spaces by one and trailing
    spaces by none (pandas pads columns to the widest number)."""
    return TRAILING.sub("", SPACES.sub(" ", VERDICT.sub("<verdict>", NUMBER.sub("#", text))))


def differences(markdown: str, produced: dict[int, list[str]]) -> list[str]:
    """One line per command whose printed output (or included file) is not the one shown (numbers masked where
    they may vary)."""
    found = []
    for block in shown(markdown):
        if block.start not in produced:
            continue
        pairs = [Command(f"include {block.title}", block.body)] if block.lang == "include" else commands(block)
        for command, printed in zip(pairs, produced[block.start]):
            same = printed == command.shown if block.exact else mask(printed) == mask(command.shown)
            if not same:
                line = markdown.count("\n", 0, block.start) + 1
                found.append(f"line {line}: `{command.command}` printed\n{printed}instead of\n{command.shown}")
    return found


def copy_figures(workdir: Path, figures_dir: Path = FIGURES_DIR) -> list[Path]:
    written = []
    for source, name in FIGURES.items():
        shutil.copyfile(workdir / source, figures_dir / name)
        written.append(figures_dir / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of rewriting; exit 1 on a difference")
    args = parser.parse_args(argv)
    markdown = TUTORIAL.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="asyncfl_tutorial_") as tmp:
        produced = run_tutorial(markdown, Path(tmp))
        if args.check:
            found = differences(markdown, produced)
            print(*found, sep="\n")
            return 1 if found else 0
        TUTORIAL.write_text(render(markdown, produced), encoding="utf-8")
        for path in copy_figures(Path(tmp)):
            print(path.relative_to(ROOT))
    print(TUTORIAL.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
