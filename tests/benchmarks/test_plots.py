"""The top-level ``plots/`` folder keeps the layout promised to users (issue 29, item 13): one
accuracy-against-virtual-seconds figure per shipped scenario that trains, made by
benchmarks/experiments/make_plots.py, listed in plots/README.md, shown in the README and on the site,
and small enough to keep the repository small."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_plots", ROOT / "benchmarks" / "experiments" / "make_plots.py")
make_plots = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_plots)

TRAINING = [p for p in make_plots.shipped() if not yaml.safe_load(p.read_text(encoding="utf-8")).get("timing_only")]
PNG_LIMIT = 150_000  # bytes: a palette PNG of one figure is 20-60 kB


def test_every_shipped_scenario_that_trains_has_its_figure():
    assert {p.stem for p in TRAINING} >= {"k_async", "sync_deadline", "compare_deadlines"}
    figures = {p.stem for p in (ROOT / "plots").glob("*.png")}
    assert figures == {p.stem for p in TRAINING}, "rerun python benchmarks/experiments/make_plots.py"
    for figure in (ROOT / "plots").glob("*.png"):
        assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and 5_000 < figure.stat().st_size < PNG_LIMIT, figure


def test_plots_readme_says_how_each_figure_was_made():
    text = (ROOT / "plots" / "README.md").read_text(encoding="utf-8")
    assert "python benchmarks/experiments/make_plots.py" in text
    for path in make_plots.shipped():
        row = next(line for line in text.splitlines() if f"`scenarios/{path.name}`" in line)
        assert ("timing only" in row) == (path not in TRAINING), row
        assert re.search(r"\d+\.\d min", row) or "timing only" in row, f"no wall time in {row}"


def test_readme_and_site_show_every_figure():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    site = (ROOT / "docs" / "reference" / "scenarios.md").read_text(encoding="utf-8")
    assert readme.index("](plots/compare_deadlines.png)") < readme.index("## Two commands")  # the main figure
    for path in TRAINING:
        assert f"](plots/{path.stem}.png)" in readme and f"](../plots/{path.stem}.png)" in site, path.stem


def test_what_it_shows_reads_the_covers_sentence_across_lines(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("# Covers: one thing\n# and its | continuation.\n# Scenario: not this.\nname: s\n")
    assert make_plots.what_it_shows(path) == "one thing and its / continuation."


def test_the_readme_footer_separates_runs_made_now_from_figures_redrawn_from_a_sweep():
    def footer(*args):
        return [line for line in make_plots.readme([], *args).splitlines() if line.startswith("Last regenerated")][0]

    assert ": 2.0 min for the 2 scenario(s) run then" in footer(120.0, 2, 1)
    redrawn = "; 1 figure(s) redrawn from a finished sweep (its runs' minutes are in the table)."
    assert footer(120.0, 2, 1).endswith(redrawn)
    assert ": no scenario run then; 1 figure(s) redrawn" in footer(0.0, 0, 1)  # not "0.0 min"
    assert footer(600.0, 7, 0).endswith(": 10.0 min for the 7 scenario(s) run then (wall time, figures on; other work "
                                        "on the machine makes it longer).")  # fmt: skip
