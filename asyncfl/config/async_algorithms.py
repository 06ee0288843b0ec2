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
    staleness: Staleness = Field(
        default=PolynomialStaleness(kind="polynomial"), description="discount s(tau); FedBuff's default (1+tau)^-0.5"
    )


class FedAsyncParams(AlgorithmParams):
    """FedAsync (Xie et al. 2019, Alg. 1): w <- (1 - a_t) w + a_t w_local, a_t = mixing * s(tau); needs server.k 1.

    The paper's experiments use mixing in {0.5, 0.6, 0.8, 0.9} and the polynomial s with a = 0.5;
    the defaults are mixing 0.6 and polynomial a = 0.5.
    """

    name: Literal["fedasync"]
    mixing: float = Field(default=0.6, gt=0, le=1, description="mixing hyperparameter alpha of FedAsync")
    staleness: Staleness = Field(
        default=PolynomialStaleness(kind="polynomial"), description="discount s(tau) of the mixing weight"
    )
    keep_versions: int | None = Field(
        default=None,
        ge=1,
        description="w_local = w_base + Delta needs the base model: keep the versions an update up to N "
        "versions stale needs (null: all; with large models set server.max_staleness and this to the same N)",
    )


class FedHistParams(AlgorithmParams):
    """FedHist (Jiang et al., fedhist.txt section II): EGS + HAA + INA on a buffer of h past rounds.

    The paper gives no values for alpha, lambda, gamma, sim_T and h; the defaults are our choices,
    justified in :mod:`asyncfl.algorithms.fedhist` and measured in plots/fedhist_sensitivity.png.
    """

    name: Literal["fedhist"]
    history: int = Field(
        default=5, ge=1, description="h, rounds of global/local gradients kept (our choice: N/(2K), paper section II-C)"
    )
    alpha: float = Field(default=0.1, ge=0, description="EGS fusion weight of eq. 7 (our choice; paper: alpha > 0)")
    lam: float = Field(default=0.1, ge=0, description="HAA lambda of eq. 8, weight of the utility (our choice)")
    gamma: float = Field(default=0.3, gt=0, le=1, description="EMA constant of eq. 13 (our choice)")
    sim_t: float = Field(default=0.1, ge=-1, le=1, description="similarity threshold sim_T of eqs. 11-12 (our choice)")
    egs: bool = Field(default=True, description="enhancement of gradient stability (eqs. 5-7); false = ablation")
    haa: bool = Field(default=True, description="history-aware aggregation (eqs. 8-13); false = uniform 1/K (ablation)")
    ina: bool = Field(default=True, description="l2-norm amplification (eq. 14); false = keep the aggregate's norm")
    staleness: Staleness = Field(
        default=ExponentialStaleness(kind="exponential"), description="s(tau) of eqs. 8 and 12: the paper's (e/2)^-tau"
    )
    staleness_offset: int = Field(
        default=1,
        ge=0,
        description="the paper counts staleness from 1 (II-C: tau >= 1), ours from 0: s is taken at tau + offset",
    )


ASYNC_ALGORITHMS: tuple[type[AlgorithmParams], ...] = (FedBuffParams, FedAsyncParams, FedHistParams)
