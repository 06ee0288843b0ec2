"""Schema of the client system model (DESIGN.md section 3): compute, network, availability, battery."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field, model_validator

from asyncfl.config.base import Distribution, Section, _probability_bounds


class Compute(Section):
    """Task time = local_steps x batch_size / samples_per_s x jitter, jitter ~ LogNormal(0, jitter_sigma)."""

    samples_per_s: Distribution = Field(default=100.0, description="training throughput per client")
    jitter_sigma: float = Field(default=0.0, ge=0, description="per-task log-normal jitter sigma")


class Network(Section):
    """Transfer time = latency_s + model_bytes / bandwidth (model_bytes from the real parameter count)."""

    uplink_mbps: Distribution = Field(default=10.0, description="upload bandwidth, megabits per second")
    downlink_mbps: Distribution = Field(default=50.0, description="download bandwidth, megabits per second")
    latency_s: Distribution = Field(default=0.05, description="one-way latency per transfer, seconds")


def _p_in_unit_interval(p: Distribution, what: str = "p") -> Distribution:
    _probability_bounds(p, what)
    return p


class AlwaysOnline(Section):
    kind: Literal["always"] = "always"


class BernoulliAvailability(Section):
    """Online with probability p_i, drawn independently per round (sync) or per slot of ``slot_s``."""

    kind: Literal["bernoulli"]
    p: Distribution = Field(description="per-client probability, e.g. {dist: uniform, low: 0.1, high: 1}")
    slot_s: float | None = Field(
        default=None, gt=0, description="slot length in virtual seconds; null = one draw per sync round"
    )

    @model_validator(mode="after")
    def _check_p(self) -> BernoulliAvailability:
        _p_in_unit_interval(self.p)
        return self


class MarkovAvailability(Section):
    """Two-state on/off process in continuous time with exponential holding times.

    Stationary probability of being online is p_i; the mean on+off cycle is ``mean_cycle_s``, so the
    mean online period is p_i * mean_cycle_s.  The initial state is drawn from the stationary law.
    """

    kind: Literal["markov"]
    p: Distribution = Field(default=0.5)
    mean_cycle_s: float = Field(gt=0, description="mean length of one online+offline cycle, seconds")

    @model_validator(mode="after")
    def _check_p(self) -> MarkovAvailability:
        _p_in_unit_interval(self.p)
        return self


class CyclicAvailability(Section):
    """Online for a fraction p_i of every period (diurnal windows) with a uniformly random phase."""

    kind: Literal["cyclic"]
    period_s: float = Field(gt=0)
    p: Distribution = Field(default=0.5, description="fraction of each period spent online")

    @model_validator(mode="after")
    def _check_p(self) -> CyclicAvailability:
        _p_in_unit_interval(self.p)
        return self


class TraceAvailability(Section):
    """Online intervals read from a CSV file with header ``client,start_s,end_s``."""

    kind: Literal["trace"]
    file: Path


Availability = Annotated[
    Union[AlwaysOnline, BernoulliAvailability, MarkovAvailability, CyclicAvailability, TraceAvailability],
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
