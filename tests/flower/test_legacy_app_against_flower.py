"""Issue 46's "Done when", for a legacy-style app: tests/flower/legacy_app.py (``ServerApp(server_fn=...)`` with
``ServerConfig`` and the legacy ``FedAvg``, a ``NumPyClient``) on the virtual Grid ends every round at the global
parameters Flower's own engine gives it, within Flower's own run-to-run spread.

benchmarks/flower_reference/legacy_app_flower.py ran the app under Flower 1.42's ``run_simulation`` (Ray, 4 nodes, one
CPU each) four times and recorded the first run's parameters after each of its 3 rounds and the runs' largest
difference (``spread``: Flower's pool threads finish in any order, and FedAvg sums the results in that order).
Here the same app runs with the same rounds and sampling (every node trains and evaluates), torch on one thread as
in Flower's workers (two threads give the same numbers for this logistic regression).  Measured: 1.5e-8, 3.0e-8 and
4.5e-8 from Flower's recorded run after rounds 1, 2, 3 (1 to 3 float32 ulps of |w| < 0.2), Flower's own spread over
4 runs being 4.5e-8.  asyncfl's side repeats exactly (its results are summed in node order), so the test does not
flake at the edge."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")
torch = pytest.importorskip("torch")

import legacy_app  # noqa: E402  (tests/flower is on sys.path)
from test_legacy_apps import ROUNDS, run_legacy  # noqa: E402

REFERENCE = Path(__file__).resolve().parent / "reference" / "legacy_app_flower.npz"


@pytest.fixture
def one_thread():
    """torch on one thread, as in Flower's Ray workers (one CPU each); the caller's count restored."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_the_legacy_app_ends_each_round_where_flowers_engine_ends_it(tmp_path, one_thread):
    with np.load(REFERENCE) as recorded:
        flower_rounds, meta = recorded["rounds"], json.loads(str(recorded["meta"]))
    assert meta["runs"] >= 2 and meta["nodes"] == 4 and len(flower_rounds) == ROUNDS
    run = run_legacy(tmp_path / "legacy", fraction_evaluate=1.0)  # the app's defaults, as run_simulation runs it
    assert list(run.rounds["received"]) == [4] * ROUNDS
    assert len(legacy_app.ROUNDS) == ROUNDS
    initial = legacy_app.world()["initial"].numpy()
    for r, (ours, flowers) in enumerate(zip(legacy_app.ROUNDS, flower_rounds), start=1):
        assert not np.array_equal(flowers, initial)  # a round that trained
        np.testing.assert_allclose(ours, flowers, rtol=0, atol=meta["spread"], err_msg=f"round {r}")
