"""Keep every number the README quotes equal to the file a script generated it into.

A README block

    <!-- include: docs/figures/some_table.md -->
    ...copied text...
    <!-- /include -->

holds exactly the content of the named file (path relative to the repository root). The scripts in
`benchmarks/experiments/` and `benchmarks/performance/` write those files (into docs/results/ and
docs/figures/) from the current code; this script copies them in.

    python benchmarks/tools/readme_sync.py            # rewrite every block from its file
    python benchmarks/tools/readme_sync.py --check    # exit 1, naming each stale or broken block

tests/test_readme_sync.py runs the check, so a README number that no longer matches its source file
fails the suite.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- include: (?P<path>[^ ]+) -->\n(?P<body>.*?)<!-- /include -->", re.DOTALL)


def _source_text(path: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    return text if text.endswith("\n") else text + "\n"


def problems(readme: Path = ROOT / "README.md") -> list[str]:
    """Each block whose file is missing or whose text differs from its file, as one line."""
    found = []
    for match in BLOCK.finditer(readme.read_text(encoding="utf-8")):
        path = match["path"]
        if not (ROOT / path).is_file():
            found.append(f"{readme.name}: block includes {path}, which does not exist")
        elif match["body"] != _source_text(path):
            found.append(f"{readme.name}: block from {path} is stale (run python benchmarks/tools/readme_sync.py)")
    return found


def sync(readme: Path = ROOT / "README.md") -> int:
    """Rewrite every block from its file; return how many blocks changed."""
    text = readme.read_text(encoding="utf-8")
    changed = 0

    def replace(match: re.Match) -> str:
        nonlocal changed
        body = _source_text(match["path"])
        changed += body != match["body"]
        return f"<!-- include: {match['path']} -->\n{body}<!-- /include -->"

    readme.write_text(BLOCK.sub(replace, text), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale blocks instead of rewriting them")
    args = parser.parse_args(argv)
    if args.check:
        found = problems()
        print("\n".join(found) if found else "every README block matches its file")
        return 1 if found else 0
    print(f"{sync()} block(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
