"""Schema of the client system model (DESIGN.md section 3): compute, network, availability, battery."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, Field, model_validator

from asyncfl.config.base import (
    Constant,
    Distribution,
    LogNormal,
    Pareto,
    Section,
    Tiers,
    Uniform,
    _number_means_constant,
    _probability_bounds,
)


class Compute(Section):
    """Task time = local_steps x batch_size / samples_per_s x jitter, jitter ~ LogNormal(0, jitter_sigma)."""

    samples_per_s: Distribution = Field(default=100.0, description="training throughput per client")
    jitter_sigma: float = Field(default=0.0, ge=0, description="per-task log-normal jitter sigma")


class Network(Section):
    """Transfer time = latency_s + model_bytes / bandwidth (model_bytes from the real parameter count)."""

    uplink_mbps: Distribution = Field(default=10.0, description="upload bandwidth, megabits per second")
    downlink_mbps: Distribution = Field(default=50.0, description="download bandwidth, megabits per second")
    latency_s: Distribution = Field(default=0.05, description="one-way latency per transfer, seconds")


class LabelCorrelated(Section):
    """Participation correlated with each client's labels (FedAU's experiments):

        p_n = min(1, max(floor, scale * L * sum_l dhat_{n,l} m_l)),   m ~ Dirichlet(dirichlet_alpha) over
        the L classes, drawn once per scenario seed, dhat_n = client n's normalised label histogram.

    Clients holding the classes that m favours participate more often.  The defaults are the ones
    the FedAU brief quotes (floor 0.02, scale 0.1, Dirichlet(0.1)); the clip at 1 only matters
    when scale * L exceeds 1."""

    dist: Literal["label_correlated"]
    dirichlet_alpha: float = Field(default=0.1, gt=0, description="concentration of the class weights m")
    scale: float = Field(default=0.1, gt=0, description="p_n = max(floor, scale * L * <dhat_n, m>)")
    floor: float = Field(default=0.02, gt=0, le=1, description="smallest participation probability")


Probability = Annotated[
    Union[Constant, Uniform, LogNormal, Pareto, Tiers, LabelCorrelated],
    BeforeValidator(_number_means_constant),
    Field(discriminator="dist"),
]
"""A per-client probability: a number, ``{dist: uniform|tiers, ...}`` in (0, 1], or ``{dist: label_correlated}``."""


def _p_in_unit_interval(p: Probability, what: str = "p") -> Probability:
    if p.dist != "label_correlated":
        _probability_bounds(p, what)
    return p


class AlwaysOnline(Section):
    kind: Literal["always"] = "always"


class BernoulliAvailability(Section):
    """Online with probability p_i, drawn independently per round (sync) or per slot of ``slot_s``."""

    kind: Literal["bernoulli"]
    p: Probability = Field(
        description="per-client probability, e.g. {dist: uniform, low: 0.1, high: 1} or {dist: label_correlated}"
    )
    slot_s: float | None = Field(
        default=None, gt=0, description="slot length in virtual seconds; null = one draw per sync round"
    )

    @model_validator(mode="after")
    def _check_p(self) -> BernoulliAvailability:
        _p_in_unit_interval(self.p)
        return self


class MarkovAvailability(Section):
    """Two-state on/off process with stationary online probability p_i; the initial state is drawn
    from the stationary law, so P(online) = p_i at every time.

    Set exactly one of ``mean_cycle_s`` (continuous time, exponential holding times; mean online
    period p_i * mean_cycle_s) or ``mean_cycle_rounds`` (FedAU's per-round chain: each sync round
    the client leaves the online state with probability 1/(p_i C) and the offline state with
    probability 1/((1 - p_i) C), C = the cycle, lengthened to at least 1/min(p_i, 1 - p_i) rounds
    so both are probabilities)."""

    kind: Literal["markov"]
    p: Probability = Field(default=0.5, description="stationary probability of being online")
    mean_cycle_s: float | None = Field(
        default=None, gt=0, description="mean length of one online+offline cycle, seconds (continuous time)"
    )
    mean_cycle_rounds: float | None = Field(
        default=None, gt=0, description="mean length of one online+offline cycle in sync rounds (per-round chain)"
    )

    @model_validator(mode="after")
    def _check(self) -> MarkovAvailability:
        _p_in_unit_interval(self.p)
        if (self.mean_cycle_s is None) == (self.mean_cycle_rounds is None):
            raise ValueError("set exactly one of mean_cycle_s (continuous time) or mean_cycle_rounds (per sync round)")
        return self


class CyclicAvailability(Section):
    """Online for a fraction p_i of every period with a uniformly random per-client phase.

    Set exactly one of ``period_s`` (diurnal windows in virtual time) or ``period_rounds`` (FedAU's
    cyclic pattern: online in max(1, round(p_i * period_rounds)) consecutive sync rounds of every
    period)."""

    kind: Literal["cyclic"]
    period_s: float | None = Field(default=None, gt=0, description="period in virtual seconds")
    period_rounds: int | None = Field(default=None, ge=1, description="period in sync rounds")
    p: Probability = Field(default=0.5, description="fraction of each period spent online")

    @model_validator(mode="after")
    def _check(self) -> CyclicAvailability:
        _p_in_unit_interval(self.p)
        if (self.period_s is None) == (self.period_rounds is None):
            raise ValueError("set exactly one of period_s (virtual time) or period_rounds (sync rounds)")
        return self


class ClusterDropoutAvailability(Section):
    """FL-FDMS's dropout process (fl-fdms.md section 2): every sync round round(alpha * N) clients,
    drawn uniformly at random, drop out, except that at least one client of every cluster stays
    active (the clusters of ``data.partition.kind: clusters``; with any other partition the whole
    population is one cluster, so at least one client stays).  When the clusters leave fewer
    droppable clients, fewer drop.  Marginal participation probability ~ 1 - alpha."""

    kind: Literal["cluster_dropout"]
    alpha: float = Field(ge=0, lt=1, description="dropout ratio: fraction of the clients offline each round")


class TraceAvailability(Section):
    """Online intervals read from a CSV file with header ``client,start_s,end_s``."""

    kind: Literal["trace"]
    file: Path


Availability = Annotated[
    Union[
        AlwaysOnline,
        BernoulliAvailability,
        MarkovAvailability,
        CyclicAvailability,
        ClusterDropoutAvailability,
        TraceAvailability,
    ],
    Field(discriminator="kind"),
]


class Charging(Section):
    """The device is plugged in for ``plugged_fraction`` of every period (random phase per client)."""

    period_s: float = Field(default=86400.0, gt=0)
    plugged_fraction: float = Field(default=0.3, ge=0, le=1)
    charge_w: float = Field(default=5.0, ge=0, description="charging power, joules per second")


class Battery(Section):
    """Energy model: a task draws joules_per_sample while training and joules_per_byte while
    transferring; a client refuses work below ``min_level`` and fails a task when it hits zero."""

    capacity_j: float = Field(gt=0)
    initial_level: Distribution = Field(default=1.0, description="fraction of capacity at time 0")
    joules_per_sample: float = Field(default=0.01, ge=0)
    joules_per_byte: float = Field(default=1e-7, ge=0)
    min_level: float = Field(default=0.1, ge=0, le=1, description="fraction needed to accept a task")
    charging: Charging | None = None

    @model_validator(mode="after")
    def _check_level(self) -> Battery:
        _probability_bounds(self.initial_level, "initial_level")
        return self


class Population(Section):
    compute: Compute = Compute()
    network: Network = Network()
    availability: Availability = AlwaysOnline()
    battery: Battery | None = None
    device_trace: Path | None = Field(
        default=None,
        description="CSV client,samples_per_s,uplink_mbps,downlink_mbps,latency_s; replaces compute/network",
    )
