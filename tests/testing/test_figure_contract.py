"""Every registered run figure held to the public figure contract (asyncfl.testing.figures): a PNG or
nothing, drawn without writing into the run directory, the same bytes twice, a file of its own; and a
broken plug-in figure caught by it."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from asyncfl.figures import FIGURES, RunFigure
from asyncfl.testing.figures import CHECKS, check_run_figure


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", list(FIGURES))
def test_contract(name, check):
    check(FIGURES[name])


def _steals_the_timeline(run):
    (run.run_dir / "scratch.txt").write_text("drawn")  # writes into the run while drawing
    return "timeline.png", Figure()


def test_a_broken_figure_is_caught():
    broken = RunFigure("thief", _steals_the_timeline)
    with pytest.raises(AssertionError, match="thief: drawing changed the run directory"):
        check_run_figure(broken)
    why = {"check_drawing_writes_nothing": "scratch file", "check_draws_a_file_of_its_own": "on purpose"}
    outcomes = check_run_figure(broken, expected_failed_checks=why)
    assert [(o.check, o.status) for o in outcomes] == [
        ("check_draws_a_png_or_nothing", "passed"), ("check_drawing_writes_nothing", "xfail"),
        ("check_same_run_same_png", "passed"), ("check_draws_a_file_of_its_own", "xfail"),
    ]  # fmt: skip
    assert "thief: draws timeline.png, as timeline does" in outcomes[3].error
