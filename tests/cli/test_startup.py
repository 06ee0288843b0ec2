"""Start-up stays light: validating imports no torch, a run imports no plotting until it plots."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout  # fmt: skip
    return set(out.split())


def test_validate_imports_no_torch():
    """The algorithm modules the schema reads hold ``torch`` as a lazy module (asyncfl.lazy): registered,
    never executed while validating."""
    loaded = _modules_after(
        "from asyncfl.cli import main\nmain(['validate', 'scenarios/k_async.yaml'])\n"
        "from asyncfl.lazy import is_loaded\nassert not is_loaded('torch')"
    )
    assert "asyncfl.config.schema" in loaded and "asyncfl.algorithms.fedbuff" in loaded
    assert not {m for m in loaded if m.startswith(("torch.", "matplotlib"))}


def test_validate_needs_neither_simpy_nor_sortedcontainers():
    """The server modes' sections and checks live beside their processes, which hold SimPy through
    asyncfl.sim.engine: validating works where the engine is not even installed."""
    loaded = _modules_after(
        "import sys\nsys.modules['simpy'] = sys.modules['sortedcontainers'] = None  # as if not installed\n"
        "from asyncfl.cli import main\nassert main(['validate', 'scenarios/k_async.yaml']) == 0\n"
        "assert main(['validate', 'scenarios/diurnal_fedscale_like.yaml']) == 0"
    )
    assert "asyncfl.sim.servers.k_async" in loaded and "asyncfl.sim.dispatch" in loaded


def test_validate_needs_neither_pandas_nor_scipy():
    """Validating a scenario or a study (claims: and tune: included) reads the study keys only; testing
    claims and choosing tuned values (asyncfl.study.claim_tests, tuning_results) load pandas and scipy
    later, when a report is written."""
    _modules_after(
        "import sys\nsys.modules['pandas'] = sys.modules['scipy'] = None  # as if not installed\n"
        "from asyncfl.cli import main\nassert main(['validate', 'scenarios/k_async.yaml']) == 0\n"
        "assert main(['validate', 'scenarios/compare_deadlines.yaml']) == 0\n"
        "assert main(['validate', 'scenarios/straggler_mitigation.yaml']) == 0"
    )


@pytest.mark.slow
def test_runner_import_leaves_plotting_and_dynamo_out():
    loaded = _modules_after("import asyncfl.runner.start")
    assert "torch" in loaded  # a run needs torch (a timing-only run too: the model size is the real model's)
    assert not {m for m in loaded if m.startswith(("matplotlib", "torch._dynamo", "asyncfl.figures"))}


@pytest.mark.slow
def test_figure_modules_leave_the_users_matplotlib_backend_alone():
    """Figures use matplotlib's object API: importing them, and drawing, imports no pyplot and never
    calls matplotlib.use (which would override a backend the user picked)."""
    loaded = _modules_after(
        "import matplotlib\nmatplotlib.use('svg')\n"
        "import asyncfl.figures, asyncfl.figures.compare, asyncfl.sweep.advise\n"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()"
    )
    assert "asyncfl.figures.run_figures" in loaded and "matplotlib.pyplot" not in loaded


def test_digits_are_read_without_importing_scikit_learn():
    """The digits file scikit-learn ships is read directly (importing sklearn cost 1.5 s of every run),
    and gives exactly what load_digits gives."""
    loaded = _modules_after("from asyncfl.learn.datasets import digits_arrays\ndigits_arrays()")
    assert "asyncfl.learn.datasets" in loaded and not {m for m in loaded if m.startswith(("sklearn", "scipy"))}
    import numpy as np
    from sklearn.datasets import load_digits

    from asyncfl.learn.datasets import digits_arrays

    data, target = digits_arrays()
    bunch = load_digits()
    assert np.array_equal(data, bunch.data) and np.array_equal(target, bunch.target) and data.shape == (1797, 64)
