"""Hyperparameters of the K-async algorithms (DESIGN.md section 5, ../shared/papers/fedhist.txt)."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from asyncfl.config.algorithm_base import AlgorithmParams
from asyncfl.config.base import Section


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
    Union[ConstantStaleness, PolynomialStaleness, HingeStaleness, ExponentialStaleness],
    Field(discriminator="kind"),
]


class FedBuffParams(AlgorithmParams):
    """FedBuff: w <- w + eta_g * (1/K) sum_i s(tau_i) Delta_i."""

    name: Literal["fedbuff"]
    staleness: Staleness = PolynomialStaleness(kind="polynomial")


ASYNC_ALGORITHMS: tuple[type[AlgorithmParams], ...] = (FedBuffParams,)
