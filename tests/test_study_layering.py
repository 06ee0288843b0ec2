"""The run directory is the only contract between simulation and analysis: asyncfl.study reads files and
imports nothing of the timing or learning world (only the runner, lazily, to execute runs), and its own
modules import each other one way (no cycle, lazy imports included)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import imported_modules, under

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "asyncfl" / "study"
ANALYSIS = tuple(sorted(path.stem for path in STUDY.glob("*.py") if path.stem != "__init__"))  # sweep, jobs too
WORLDS = ("asyncfl.sim", "asyncfl.learn", "asyncfl.algorithms", "asyncfl.runner", "torch", "simpy")


def test_study_modules_import_no_simulation_or_learning_code():
    imports = {path.stem: imported_modules(path) for path in STUDY.glob("*.py")}
    reaching = {name: sorted(m for m in found if under(m, WORLDS)) for name, found in imports.items()}
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
    (SimPy included), and never torch."""
    schema = _loaded("import asyncfl.config\nasyncfl.config.Scenario\n")
    modules = _loaded("".join(f"import asyncfl.study.{name}\n" for name in ANALYSIS))
    assert {f"asyncfl.study.{name}" for name in ANALYSIS} <= modules
    assert sorted(m for m in modules - schema if under(m, WORLDS)) == []
    assert "torch" not in modules | schema


def test_study_modules_import_each_other_one_way():
    """sweep -> ray_executor -> jobs, never back (ray_executor used to import sweep, which imports it)."""
    graph = {
        path.stem: {m.rsplit(".", 1)[1] for m in imported_modules(path) if m.startswith("asyncfl.study.")}
        for path in STUDY.glob("*.py")
    }
    assert "ray_executor" in graph["sweep"] and graph["ray_executor"] == {"jobs"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, ()))

    assert [name for name in graph if reaches(name, name, {name})] == []
