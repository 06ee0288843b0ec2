"""The README's Flower line stays true: it runs the example as an app folder (``flower . SCENARIO``) from the
folder it changes into, which holds a pyproject.toml and the scenario it names."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_flower_line_names_an_app_folder_and_its_scenario():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(line.strip() for line in readme.splitlines() if "python -m asyncfl flower" in line)
    match = re.fullmatch(r'pip install -e "\.\[flower\]" && cd (\S+) && python -m asyncfl flower \. (\S+\.yaml)', line)
    assert match, line
    folder = ROOT / match.group(1)
    assert (folder / "pyproject.toml").is_file() and (folder / match.group(2)).is_file()
