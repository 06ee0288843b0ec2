"""Every relative link in the documentation points at a file that is committed.

CI's strict MkDocs build catches a broken link, but only after the test command has passed; a page that
a generator writes with a link that resolves where it is written but not where docs_sync copies it (a
results page synced into docs/findings/) once failed there. This test runs in the README's test command.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")


def _committed(path: Path) -> bool:
    """Whether git tracks ``path`` (a generated file left untracked would pass on this machine only)."""
    out = subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], cwd=ROOT, capture_output=True)
    return out.returncode == 0


def _links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


def test_the_link_pattern_finds_relative_links_and_skips_urls_and_code() -> None:
    page = "[a](x.md) ![f](../figures/y.png) [u](https://e.org) [h](#top) `[c](no.md)`\n```\n[d](no2.md)\n```\n"
    text = CODE.sub("", FENCE.sub("", page))
    found = [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]
    assert found == ["x.md", "../figures/y.png"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_committed_file(page: Path) -> None:
    if not _committed(page):
        pytest.skip("not a committed page")
    broken = []
    for target in _links(page):
        path = (page.parent / target.split("#")[0]).resolve()
        if path.is_relative_to(DOCS / "plots"):  # served from the top-level plots/ (benchmarks/tools/mkdocs_plots.py)
            path = ROOT / path.relative_to(DOCS)
        if not (path.exists() and (path.is_dir() or _committed(path))):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing or uncommitted files: {broken}"
