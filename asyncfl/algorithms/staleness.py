"""Staleness discount functions s(tau) shared by every K-async algorithm: their YAML sections and values.

constant     s = 1
polynomial   s = (1 + tau)^-a                      (FedAsync, Xie et al. 2019; FedBuff uses a = 0.5)
hinge        s = 1 if tau <= b else 1/(a(tau - b) + 1)   (FedAsync)
exponential  s = (e/2)^-tau                         (FedHist, eq. 9)
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field

from asyncfl.sections import Section


class ConstantStaleness(Section):
    """s(tau) = 1."""

    kind: Literal["constant"]


class PolynomialStaleness(Section):
    """s(tau) = (1 + tau)^-a (FedAsync's polynomial; FedBuff's default with a = 0.5)."""

    kind: Literal["polynomial"]
    a: float = Field(default=0.5, ge=0)


class HingeStaleness(Section):
    """s(tau) = 1 if tau <= b else 1 / (a (tau - b) + 1) (FedAsync's hinge)."""

    kind: Literal["hinge"]
    a: float = Field(default=10.0, ge=0)
    b: int = Field(default=4, ge=0)


class ExponentialStaleness(Section):
    """s(tau) = (e/2)^-tau (FedHist's staleness discount)."""

    kind: Literal["exponential"]


Staleness = Annotated[
    ConstantStaleness | PolynomialStaleness | HingeStaleness | ExponentialStaleness,
    Field(discriminator="kind"),
]


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
