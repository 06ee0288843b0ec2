"""What the side-by-side benchmarks (``bench_flgo.py``, ``bench_pfl.py``) share: the FLGo anchor's data
split and one timed process of a peer or of asyncfl.

The anchor (``/work/shared/anchors/flgo``) splits sklearn's digits 80/20, stratified, ``random_state=0``
(``common.load_digits_split``); :func:`anchor_split` redoes that split on the sample numbers, so that both
sides of it are known by their ``load_digits`` index and asyncfl can read them as a ``file`` partition.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def anchor_split() -> tuple[np.ndarray, np.ndarray]:
    """(training, test) sample numbers in ``load_digits`` order, each in the anchor's order."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    labels = load_digits().target
    train, test = train_test_split(np.arange(len(labels)), test_size=0.2, stratify=labels, random_state=0)
    return train, test


def run_process(command: list[str], threads: int, cwd: Path | None = None) -> tuple[float, str]:
    """(wall seconds, stdout) of one process with ``threads`` OpenMP/MKL threads; raise with its output
    when it fails."""
    # the asyncfl of this tree, not whichever one is installed (the processes run in a scratch folder)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "PYTHONPATH": path}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return wall, done.stdout
