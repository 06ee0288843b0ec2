"""Staleness discount functions s(tau) shared by every K-async algorithm.

constant     s = 1
polynomial   s = (1 + tau)^-a                      (FedAsync, Xie et al. 2019; FedBuff uses a = 0.5)
hinge        s = 1 if tau <= b else 1/(a(tau - b) + 1)   (FedAsync)
exponential  s = (e/2)^-tau                         (FedHist, eq. 9)
"""

from __future__ import annotations

import math

from asyncfl.config.async_algorithms import Staleness


def staleness_weight(spec: Staleness, tau: int) -> float:
    if tau < 0:
        raise ValueError(f"negative staleness {tau}")
    if spec.kind == "constant":
        return 1.0
    if spec.kind == "polynomial":
        return (1.0 + tau) ** (-spec.a)
    if spec.kind == "hinge":
        return 1.0 if tau <= spec.b else 1.0 / (spec.a * (tau - spec.b) + 1.0)
    if spec.kind == "exponential":
        return (math.e / 2.0) ** (-tau)
    raise ValueError(f"unknown staleness function {spec.kind!r}")
