"""The run directory is the only contract between running and analysis: asyncfl.study reads files and
imports nothing of the timing or learning world, the run loop or the sweeps (asyncfl.sweep, above it,
runs the scenarios and then calls the analysis); each package's modules import each other one way (no
cycle, lazy imports included)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import imported_modules, under

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "asyncfl" / "study"
SWEEP = ROOT / "asyncfl" / "sweep"
ANALYSIS = tuple(sorted(path.stem for path in STUDY.glob("*.py") if path.stem != "__init__"))
# the run loop (asyncfl/runner/, its callbacks and checkpoints included), the sweeps and the two worlds
RUNNING = ("asyncfl.runner", "asyncfl.sweep")
WORLDS = ("asyncfl.sim", "asyncfl.learn", "asyncfl.algorithms", "torch", "simpy", *RUNNING)


def test_study_modules_import_no_simulation_learning_or_running_code():
    imports = {path.stem: imported_modules(path) for path in STUDY.glob("*.py")}
    reaching = {name: sorted(m for m in found if under(m, WORLDS)) for name, found in imports.items()}
    assert {name: found for name, found in reaching.items() if found} == {}


def test_only_the_sweeps_call_the_run_loop():
    """asyncfl.sweep.jobs.run_job is the one module of the sweeps that runs a scenario (the executors and
    advise hand it jobs), and the sweeps need nothing of the two worlds directly."""
    imports = {path.stem: imported_modules(path) for path in SWEEP.glob("*.py")}
    reaching = {name: sorted(m for m in found if under(m, WORLDS) and not under(m, ("asyncfl.sweep",)))
                for name, found in imports.items()}  # fmt: skip
    assert {name: found for name, found in reaching.items() if found} == {"jobs": ["asyncfl.runner.start"]}


def _loaded(imports: str) -> set[str]:
    code = f"import sys\n{imports}print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    return set(done.stdout.split())


@pytest.mark.slow
def test_analysis_modules_load_without_simulation_learning_or_torch():
    """The analysis reads scenarios through asyncfl.config, whose schema is built from the registries'
    metadata (availability kinds, data sets, models, partitioners, server modes, algorithms: modules that
    import no torch); beyond what the config loads, the analysis modules load nothing of the two worlds
    (SimPy included), the run loop or the sweeps, and never torch."""
    schema = _loaded("import asyncfl.config\nasyncfl.config.Scenario\n")
    modules = _loaded("".join(f"import asyncfl.study.{name}\n" for name in ANALYSIS))
    assert {f"asyncfl.study.{name}" for name in ANALYSIS} <= modules
    assert sorted(m for m in modules - schema if under(m, WORLDS)) == []
    assert "torch" not in modules | schema


def _graph(folder: Path) -> dict[str, set[str]]:
    package = f"asyncfl.{folder.name}."
    return {
        path.stem: {m.removeprefix(package) for m in imported_modules(path) if m.startswith(package)}
        for path in folder.glob("*.py")
    }


@pytest.mark.parametrize("folder", [STUDY, SWEEP], ids=["study", "sweep"])
def test_modules_import_each_other_one_way(folder: Path):
    graph = _graph(folder)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, ()))

    assert [name for name in graph if reaches(name, name, {name})] == []


def test_the_executors_build_on_the_jobs_never_back():
    """study_sweep -> ray_executor -> jobs, and advise -> jobs (ray_executor used to import the sweep,
    which imports it)."""
    graph = _graph(SWEEP)
    assert graph["study_sweep"] == {"jobs", "ray_executor"} and graph["ray_executor"] == {"jobs"}
    assert graph["advise"] == {"jobs"} and graph["jobs"] == set()
