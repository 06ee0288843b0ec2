"""Every YAML block of the documentation (docs/**/*.md and README.md) is a scenario or a study that
``python -m asyncfl validate`` accepts, as a reader would paste it into a file (issue 29, item 21: the
FedNova + FedProx block of docs/how-to/stragglers.md was refused by the very tool the page documents).

A block that cannot stand alone -- keys to add to another file, or a scenario that names files the
reader makes first -- says so in the page: an HTML comment ``<!-- fragment: why -->`` on the line
before it (invisible in the rendered page).  The reason is required, and a fragment must still be
YAML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from asyncfl.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```ya?ml[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
FRAGMENT = re.compile(r"<!-- fragment(?::\s*(.*?))?\s*-->\s*\Z", re.DOTALL)


def _blocks() -> list[tuple[str, str, str | None]]:
    """(page:line, the block's text, the fragment marker's reason or None) of every YAML block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            marker = FRAGMENT.search(text[: match.start()].rstrip() + "\n")
            where = f"{page.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}"
            found.append((where, match.group(1), None if marker is None else (marker.group(1) or "")))
    return found


BLOCKS = _blocks()


def test_the_docs_have_yaml_blocks():
    """The collector finds the blocks (a changed fence style would otherwise pass everything)."""
    assert len(BLOCKS) >= 10 and any(where.startswith("docs/how-to/stragglers.md") for where, _, _ in BLOCKS)


@pytest.mark.parametrize("where, block, fragment", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_every_yaml_block_validates_or_says_why_it_is_a_fragment(where, block, fragment, tmp_path, capsys):
    assert isinstance(yaml.safe_load(block), dict), f"{where}: not a YAML mapping"
    if fragment is not None:
        assert fragment.strip(), f"{where}: a fragment marker must say why: <!-- fragment: why -->"
        return
    path = tmp_path / "block.yaml"
    path.write_text(block, encoding="utf-8")
    status = main(["validate", str(path)])
    assert status == 0, f"{where}: validate refuses the block:\n{capsys.readouterr().err}"
