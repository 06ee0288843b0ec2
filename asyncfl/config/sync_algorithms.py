"""Hyperparameters of the synchronous-round algorithms (DESIGN.md section 5).

Defaults follow the papers in ../shared/papers; where a paper gives none the choice is documented
on the field.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from asyncfl.config.algorithm_base import AlgorithmParams
from asyncfl.config.base import Section


class FedAvgParams(AlgorithmParams):
    """FedAvg: w <- w + eta_g * sum_i a_i Delta_i over the received deltas.

    ``all_clients`` is FedAU's "average all" baseline: a_i = 1/N, so the step shrinks when few
    clients participate (fedau-slides.md, Algorithm 1 with omega = 1)."""

    name: Literal["fedavg"]
    weighting: Literal["uniform", "samples", "all_clients"] = Field(
        default="uniform",
        description="uniform: mean of received; samples: weighted by sample counts; all_clients: sum / N",
    )


class FedAvgKnownPParams(AlgorithmParams):
    """FedAvg with known participation probabilities (FedAR's FedAvg-IS, FedAU's "known participation
    statistics"): w <- w + eta_g / N * sum_i Delta_i / p_i, p_i from the availability model."""

    name: Literal["fedavg_known_p"]


class MifaParams(AlgorithmParams):
    """MIFA (Gu et al. 2021): w <- w + eta_g * mean over clients of each one's latest Delta."""

    name: Literal["mifa"]
    wait_for_all: bool = Field(
        default=False,
        description="true: no update until every client delivered once, then average over all N (original "
        "MIFA); false: average over the clients seen so far",
    )


class FedVarpParams(AlgorithmParams):
    """FedVARP (Jhunjhunwala et al. 2022): v = mean_all(y) + mean_{i in S}(Delta_i - y_i); y_i <- Delta_i."""

    name: Literal["fedvarp"]


class LinearCutoff(Section):
    """g(t) = t0 + t / b (FedAR Theorem 1, convex analysis: t0 > 0, b > 2).  t0 = 20, b = 4 are our
    choice: the paper gives no values."""

    kind: Literal["linear"]
    t0: float = Field(default=20.0, gt=0, description="rounds of inactivity tolerated at the start")
    b: float = Field(default=4.0, gt=2, description="g grows by one every b rounds")


class SqrtCutoff(Section):
    """g(t) = c * max(sqrt(t), sqrt(t0)) (FedAR Theorem 2, non-convex analysis).  The paper's c depends
    on unknown constants (L, beta, lambda, K, N); c = 4 and t0 = 25 are our choice (g = 20 at first)."""

    kind: Literal["sqrt"]
    c: float = Field(default=4.0, gt=0)
    t0: float = Field(default=25.0, gt=0)


class NoCutoff(Section):
    """g(t) = infinity: no client is ever excluded."""

    kind: Literal["none"]


Cutoff = Annotated[Union[LinearCutoff, SqrtCutoff, NoCutoff], Field(discriminator="kind")]


class FedArParams(AlgorithmParams):
    """FedAR (fedar.md section 4, eqs. 4-7): psi-weighted latest updates of every contributing client."""

    name: Literal["fedar"]
    rho: float = Field(default=0.1, ge=0, le=1, description="psi = min((tau + 1)^rho, psi_max); paper section 6")
    psi_max: float = Field(default=2.0, ge=1, description="cap of psi; the paper fixes 2 for its convergence proof")
    cutoff: Cutoff = Field(
        default=LinearCutoff(kind="linear"),
        description="g(t): clients inactive for g(t) rounds or more get psi = 0 and leave N_t",
    )


class FedAuParams(AlgorithmParams):
    """FedAU (fedau-slides.md, Algorithms 1-2): omega_i = online mean of participation intervals,
    each interval cut off at K; w <- w + eta_g / N * sum_{i in S} omega_i Delta_i."""

    name: Literal["fedau"]
    cutoff: int | None = Field(
        default=50, ge=1, description="interval cutoff K (paper's experiments: 50); null = K -> infinity"
    )


class Elimination(Section):
    """FL-FDMS's candidate-set elimination (fl-fdms.md section 4.3, Hoeffding race).

    Client i leaves client k's candidate set once R_k,best - R_k,i >= Theta_t with
    Theta_t = scale * sqrt((2 ln(2 N^2 T B_max) - 2 ln p) / (beta t)) + delta_f (Theorem 2).  The
    paper uses scale 1 ("Case 1") and 0.5 ("Case 2") and gives no values for beta, p, delta_f,
    B_max, T: the defaults below are our choice."""

    enabled: bool = Field(default=False, description="eliminate candidates (saves similarity computations)")
    scale: float = Field(default=1.0, gt=0, description="multiplies Theorem 2's threshold (paper: 1 or 0.5)")
    confidence: float = Field(default=0.1, gt=0, lt=1, description="p: failure probability of the race")
    beta: float = Field(default=0.5, gt=0, le=1, description="fraction of rounds any pair is co-active")
    delta_f: float = Field(default=0.0, ge=0, description="largest similarity gap among friends")
    horizon_rounds: int = Field(default=1000, ge=1, description="T of Theorem 2")
    max_friends: int | None = Field(default=None, ge=1, description="B_max of Theorem 2; null = N - 1")


class FlFdmsParams(AlgorithmParams):
    """FL-FDMS (fl-fdms.md section 4, eqs. 9-10): dropped clients take the update of their most
    similar active client ("friend"); the aggregate is the mean over all N clients."""

    name: Literal["fl_fdms"]
    elimination: Elimination = Elimination()


SYNC_ALGORITHMS: tuple[type[AlgorithmParams], ...] = (
    FedAvgParams,
    FedAvgKnownPParams,
    MifaParams,
    FedVarpParams,
    FedArParams,
    FedAuParams,
    FlFdmsParams,
)
