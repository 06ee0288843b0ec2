"""Figures sit below the studies and beside the run files: asyncfl.figures reads run directories (and
tables handed to it) and imports no simulation, learning or study code, so the run's summary can
draw them without the core importing the analysis; the command line is the only caller above both."""

from __future__ import annotations

from pathlib import Path

from conftest import imported_modules, under

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("asyncfl.study", "asyncfl.sweep", "asyncfl.cli", "asyncfl.sim", "asyncfl.learn", "asyncfl.algorithms",
             "asyncfl.runner", "torch", "simpy")  # fmt: skip


def _reaching(folder: Path, roots: tuple[str, ...]) -> dict[str, list[str]]:
    imports = {str(p.relative_to(ROOT)): imported_modules(p) for p in sorted(folder.rglob("*.py"))}
    hits = {name: sorted(m for m in found if under(m, roots)) for name, found in imports.items()}
    return {name: found for name, found in hits.items() if found}


def test_figures_import_no_simulation_learning_study_or_cli_code():
    assert _reaching(ROOT / "asyncfl" / "figures", FORBIDDEN) == {}


def test_only_the_command_line_and_the_api_import_the_study_or_the_command_line():
    """Core modules (everything outside study/, sweep/, cli/ and the Python API) never import
    asyncfl.study, asyncfl.sweep nor asyncfl.cli; asyncfl/__main__.py only hands over to asyncfl.cli."""
    package = ROOT / "asyncfl"
    above = ("study", "sweep", "cli", "api")
    core = [p for p in package.rglob("*.py") if p.parent.name not in above and p.name != "__main__.py"]
    roots = ("asyncfl.study", "asyncfl.sweep", "asyncfl.cli")
    assert {p: found for p in core if (found := sorted(m for m in imported_modules(p) if under(m, roots)))} == {}
    assert imported_modules(package / "__main__.py") == {"sys", "asyncfl.cli"}
