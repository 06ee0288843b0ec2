"""Times and rounds to a target as survival data: where a run that never reached the target is censored, and
how a pair of (possibly censored) times is scored.

- The horizon: a run that misses the target (diverged included) is censored at the horizon it was given,
  not where it stopped.  A run that did not diverge ran to its stop (``stop.virtual_time_s`` or
  ``stop.rounds``): its own end is its horizon.  A run that diverged stopped early: its horizon is its
  ``stop.virtual_time_s`` when config.yaml declares one, else the median end of the same variant's runs
  that did not diverge (its own end when every one of them diverged).  The half-horizon check of the paper
  tables cuts a diverged run with the same rule (:func:`planned_horizon`).  Rounds to a target follow the
  same rule in rounds: a run's end is its last round (summary.json's ``rounds``) and a diverged run's
  declared horizon its ``stop.rounds``.
- The restricted time: a reached time as it is, a miss as its horizon, so the mean over all seeds is the
  restricted mean time to target (RMST, restricted at the horizon) and the difference of two variants'
  RMSTs is the mean of their paired differences.
- The pair's sign (Gehan 1965, paired form): +1 when the variant's time is known to be the larger, −1 when
  the other's is, 0 when it cannot be told: both censored (a tie), equal times, or a time observed after the
  other run's censoring time.  A censored time is larger than an observed one at or before its horizon,
  since the run had not reached the target by then.
- The pair's score (Wilcoxon's signed rank, 1945, on the restricted times): that sign times the rank of the
  restricted difference's size among the pairs whose sign is not 0 (midranks for equal sizes).  A rank,
  not the size, so a run that diverged early weighs one rank, however far its horizon lies from the
  other run's time; under "no difference" the two runs of a pair are exchangeable, so each score is as
  likely to have either sign and the sign-flip test of the scores is exact.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
import yaml
from scipy import stats

from asyncfl.output.reading import read_summary
from asyncfl.output.run_directory import ENDED
from asyncfl.study.seed_statistics import RunRecord

# axis -> the key of a run's end in summary.json and of its declared stop in config.yaml's stop: (the same name)
HORIZON_KEYS = {"time": "virtual_time_s", "round": "rounds"}


def declared_stop(run_dir: Path, key: str = HORIZON_KEYS["time"]) -> float | None:
    """The run's ``stop.<key>`` (``virtual_time_s`` or ``rounds``) from its config.yaml (None when absent or
    unreadable)."""
    try:
        raw = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8")) or {}
        limit = (raw.get("stop") or {}).get(key)
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    return float(limit) if isinstance(limit, (int, float)) and limit > 0 else None


def planned_horizon(run_dir: Path, peers: Sequence[float], key: str = HORIZON_KEYS["time"]) -> float | None:
    """Where a run that diverged would have stopped: its ``stop.<key>`` (``virtual_time_s``, or ``rounds`` for
    a horizon in rounds), else the median horizon of ``peers`` (the same variant's runs that did not diverge);
    None for a run that did not diverge, or when neither is known."""
    if read_summary(run_dir, required=False).get("status") != "diverged":
        return None
    limit = declared_stop(run_dir, key)
    if limit is not None:
        return limit
    return float(np.median(peers)) if len(peers) else None


def _end(run_dir: Path, key: str) -> tuple[str | None, float | None]:
    summary = read_summary(run_dir, required=False)
    end = summary.get(key)
    return summary.get("status"), float(end) if isinstance(end, (int, float)) else None


def run_horizons(records: Sequence[RunRecord], axis: str = "time") -> dict[str, dict[int, float]]:
    """variant -> seed -> the horizon at which each ended run's miss of a target is censored (see the module
    docstring): in virtual seconds (``axis`` "time") or in rounds ("round"); a run without a seed is keyed by
    its position among the variant's runs, as :func:`asyncfl.study.report.measure_table` keys it."""
    key = HORIZON_KEYS[axis]
    ends = {id(r): _end(r.path, key) for r in records}
    peers: dict[str, list[float]] = {}
    for r in records:
        status, end = ends[id(r)]
        if status in ENDED and status != "diverged" and end is not None:
            peers.setdefault(r.label, []).append(end)
    out: dict[str, dict[int, float]] = {}
    for label in dict.fromkeys(r.label for r in records):
        for i, r in enumerate(r for r in records if r.label == label):
            status, end = ends[id(r)]
            if status not in ENDED or end is None:
                continue
            horizon = planned_horizon(r.path, peers.get(label, []), key) or end
            out.setdefault(label, {})[i if r.seed is None else int(r.seed)] = horizon
    return out


def pair_score(own: float, other: float, own_censored: bool, other_censored: bool) -> int:
    """The Gehan score of one pair of times (see the module docstring): the sign of own − other where it is
    known, else 0.  A censored value is its run's horizon, a lower bound of the time it never reached."""
    if own_censored and other_censored:
        return 0
    if own_censored:
        return 1 if other <= own else 0
    if other_censored:
        return -1 if own <= other else 0
    return int(np.sign(own - other))


def signed_ranks(signs: Sequence[int], differences: Sequence[float]) -> list[float]:
    """Each pair's score (see the module docstring): its sign times the midrank of |difference| among the
    pairs with a sign; 0 for a pair without one."""
    signed = [i for i, s in enumerate(signs) if s]
    ranks = stats.rankdata([abs(differences[i]) for i in signed]) if signed else []
    scores = [0.0] * len(signs)
    for i, rank in zip(signed, ranks):
        scores[i] = signs[i] * float(rank)
    return scores


def restricted(value: float | None, horizon: float | None) -> float | None:
    """A time (or rounds) to target restricted at the horizon: the time where the run reached it, else the
    horizon."""
    return value if value is not None and math.isfinite(value) else horizon
