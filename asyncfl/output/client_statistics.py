"""Statistics over the clients of one run: the columns of client_accuracy.csv and how they are computed
from clients.csv, shared by the run's own client_accuracy tables and figure
(:mod:`asyncfl.figures.client_accuracy`) and a comparison's table over seeds
(:mod:`asyncfl.study.seed_statistics`).  Here, beside the run files both read, so that neither needs
the other (the analysis would otherwise load matplotlib through figures/ to average a table)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def bias_stats(accuracies: Sequence[float]) -> dict[str, float]:
    """FedAR Table 3 over clients, in percent: mean +- std, variance (ddof=0, over clients), and the
    mean +- std of the worst and best 10 % of clients (at least one client each)."""
    a = np.asarray(accuracies, dtype=np.float64)
    a = np.sort(a[~np.isnan(a)]) * 100
    if not len(a):
        return {}
    k = max(1, math.ceil(0.1 * len(a)))
    worst, best = a[:k], a[-k:]
    return {
        "clients": len(a), "mean": float(a.mean()), "std": float(a.std()), "var": float(a.var()),
        "worst10_mean": float(worst.mean()), "worst10_std": float(worst.std()),
        "best10_mean": float(best.mean()), "best10_std": float(best.std()),
    }  # fmt: skip
