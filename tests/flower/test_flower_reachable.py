"""``asyncfl.flower`` from ``import asyncfl`` alone (issue 45, item 13): an attribute loaded on first use, which
does not load flwr (nor asyncfl.flower) before it is asked for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
import asyncfl
assert "asyncfl.flower" not in sys.modules and "flwr" not in sys.modules, "loaded eagerly"
run = asyncfl.flower.run
assert "flwr" not in sys.modules, "the face loaded flwr"
print(run.__module__, run.__name__)
"""


@pytest.mark.slow
def test_asyncfl_flower_run_is_reachable_after_import_asyncfl_without_loading_flwr():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["asyncfl.flower", "run"]


def test_an_unknown_attribute_is_still_an_attribute_error():
    import asyncfl

    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        asyncfl.nothing_here  # noqa: B018
