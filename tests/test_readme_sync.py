"""Every README block that quotes a generated file must equal that file (benchmarks/tools/readme_sync.py)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("readme_sync", ROOT / "benchmarks" / "tools" / "readme_sync.py")
readme_sync = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme_sync)


def test_readme_blocks_match_their_generated_files():
    assert readme_sync.problems() == []


def test_check_catches_a_stale_and_a_missing_block(tmp_path, monkeypatch):
    (tmp_path / "table.md").write_text("| a | 1 |\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "x\n<!-- include: table.md -->\n| a | 2 |\n<!-- /include -->\n"
        "<!-- include: gone.md -->\nold\n<!-- /include -->\n"
    )
    monkeypatch.setattr(readme_sync, "ROOT", tmp_path)
    found = readme_sync.problems(readme)
    assert len(found) == 2 and "table.md is stale" in found[0] and "gone.md" in found[1]
    (tmp_path / "gone.md").write_text("new")
    assert readme_sync.sync(readme) == 2
    assert readme_sync.problems(readme) == []
    assert "| a | 1 |\n<!-- /include -->" in readme.read_text()
