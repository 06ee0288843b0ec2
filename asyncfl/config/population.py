"""Schema of the client system model (DESIGN.md section 3): compute, network, availability, battery."""

from __future__ import annotations

import math
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
from asyncfl.config.presets import PRESETS, PresetNames

PRESET_LIST = tuple(PRESETS)


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


class DiurnalAvailability(Section):
    """Online with a probability that follows each client's *local* time of day (``clock.start_time``,
    default midnight UTC at virtual time 0, shifted by the client's ``population.timezones`` offset).

    The day's shape is a sinusoid w(h) = 1 + amplitude * cos(2 pi (h + 0.5 - peak_hour) / 24) over the
    24 local hours, or the 24 relative weights of ``hourly``.  Hour h's online probability is
    pi_h = min(1, c_i w(h)) with c_i chosen so that the mean of the 24 pi_h is exactly p_i, the
    client's long-run fraction of time online.  Within an hour the client follows a two-state on/off
    chain (mean on+off cycle ``mean_cycle_s``) started in its stationary law, coupled maximally
    across hour boundaries (asyncfl/sim/availability.py, class Diurnal): P(online at t) = pi_h(t)
    at every t, with exact switch times."""

    kind: Literal["diurnal"]
    p: Probability = Field(default=0.5, description="long-run fraction of time online (mean over the day)")
    amplitude: float = Field(default=0.8, ge=0, le=1, description="relative swing of the sinusoid (0: flat)")
    peak_hour: float = Field(default=20.0, ge=0, lt=24, description="local hour of the highest online probability")
    hourly: list[float] | None = Field(
        default=None,
        description="24 relative weights for local hours 0..23 (replaces amplitude and peak_hour)",
    )
    mean_cycle_s: float = Field(default=1800.0, gt=0, description="mean on+off cycle within an hour, seconds")

    @model_validator(mode="after")
    def _check(self) -> DiurnalAvailability:
        _p_in_unit_interval(self.p)
        if self.hourly is not None:
            if len(self.hourly) != 24:
                raise ValueError(f"hourly needs 24 weights (local hours 0..23), got {len(self.hourly)}")
            if min(self.hourly) < 0 or sum(self.hourly) <= 0:
                raise ValueError("hourly weights must be non-negative and not all zero")
            changed = [k for k in ("amplitude", "peak_hour") if getattr(self, k) != type(self).model_fields[k].default]
            if changed:
                raise ValueError(
                    f"set either hourly or {' and '.join(changed)}, not both (hourly replaces the sinusoid)"
                )
        return self

    def weights(self) -> list[float]:
        """The 24 hourly weights, scaled to mean 1."""
        if self.hourly is not None:
            raw = list(self.hourly)
        else:
            raw = [1 + self.amplitude * math.cos(2 * math.pi * (h + 0.5 - self.peak_hour) / 24) for h in range(24)]
        mean = sum(raw) / 24
        return [w / mean for w in raw]


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
        DiurnalAvailability,
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


class ZoneShare(Section):
    share: float = Field(gt=0, le=1, description="fraction of the clients")
    offset: float = Field(ge=-12, le=14, description="UTC offset in hours (e.g. -5, 1, 5.5)")


class UniformZones(Section):
    """UTC offsets drawn uniformly from [low, high] hours (fractional offsets included)."""

    dist: Literal["uniform"]
    low: float = Field(ge=-12, le=14)
    high: float = Field(ge=-12, le=14)

    @model_validator(mode="after")
    def _ordered(self) -> UniformZones:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) must not exceed high ({self.high})")
        return self


TimeZones = Union[float, list[ZoneShare], UniformZones]
"""One UTC offset for everybody, a list of ``{share, offset}`` (shares sum to 1), or ``{dist: uniform, low, high}``."""


UnmeteredNetwork = Annotated[
    Union[MarkovAvailability, CyclicAvailability, DiurnalAvailability, BernoulliAvailability],
    Field(discriminator="kind"),
]


class Eligibility(Section):
    """Production FL's eligibility (Bonawitz et al. 2019, "Towards federated learning at scale"): a
    device checks in only while it is idle, charging and on an unmetered network.  Here
    ``population.availability`` stands for idle and reachable; ``charging: true`` adds the plugged-in
    windows of ``population.battery.charging``; ``unmetered`` adds an on/off process of being on
    Wi-Fi (any continuous-time availability kind: markov with mean_cycle_s, cyclic with period_s,
    diurnal, bernoulli with slot_s).  A client accepts a task only while every required condition
    holds; a task in progress fails when one ends, with reason ``charging`` or ``network``
    (``offline`` when availability ends), recorded in events.jsonl, rounds.csv and clients.csv."""

    charging: bool = Field(default=False, description="require the device to be plugged in (battery.charging windows)")
    unmetered: UnmeteredNetwork | None = Field(
        default=None, description="on/off process of an unmetered network (null: not required)"
    )

    def reasons(self) -> list[str]:
        """The failure reasons these conditions add, in the order the conditions are checked."""
        return (["charging"] if self.charging else []) + (["network"] if self.unmetered is not None else [])

    @model_validator(mode="after")
    def _check(self) -> Eligibility:
        if not self.charging and self.unmetered is None:
            raise ValueError("requires nothing: set charging: true and/or unmetered (or remove eligibility)")
        u = self.unmetered
        if u is not None:
            if getattr(u.p, "dist", None) == "label_correlated":
                raise ValueError(
                    "unmetered.p: label_correlated is for availability only; use a number, uniform or tiers"
                )
            round_based = (
                (u.kind == "markov" and u.mean_cycle_rounds is not None)
                or (u.kind == "cyclic" and u.period_rounds is not None)
                or (u.kind == "bernoulli" and u.slot_s is None)
            )
            if round_based:
                raise ValueError(
                    "unmetered: the network process runs in virtual time; use markov with mean_cycle_s, cyclic with "
                    "period_s, diurnal, or bernoulli with slot_s"
                )
        return self


def _apply_presets(raw: object) -> object:
    """``preset: name`` (or a list of names, applied in order) fills population keys; every key the
    scenario sets itself wins, key by key (a section whose ``kind``/``dist`` differs replaces the
    preset's section as a whole)."""
    if not isinstance(raw, dict) or raw.get("preset") is None:
        return raw
    from asyncfl.config.presets import PRESETS, merge

    names = raw["preset"] if isinstance(raw["preset"], list) else [raw["preset"]]
    merged: dict = {}
    for name in names:
        if not isinstance(name, str) or name not in PRESETS:
            return raw  # the field's own check names the allowed values
        merged = merge(merged, PRESETS[name].values)
    return {**merge(merged, {k: v for k, v in raw.items() if k != "preset"}), "preset": raw["preset"]}


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, str) else value


class Population(Section):
    """The client system model.  ``preset`` fills keys from a published distribution (see the README's
    presets table); any key set here overrides the preset's."""

    preset: Annotated[list[PresetNames], BeforeValidator(_one_or_many)] | None = Field(
        default=None,
        description="fill keys from published distributions (a name or a list, applied in order); keys set here "
        "override the preset's, key by key (presets table below)",
        json_schema_extra={"allowed": "a name or a list of: " + ", ".join(f"`{n}`" for n in PRESET_LIST)},
    )
    compute: Compute = Compute()
    network: Network = Network()
    availability: Availability = AlwaysOnline()
    battery: Battery | None = None
    device_trace: Path | None = Field(
        default=None,
        description="CSV client,samples_per_s,uplink_mbps,downlink_mbps,latency_s; replaces compute/network",
    )
    timezones: TimeZones | None = Field(
        default=None,
        description="per-client UTC offsets in hours in [-12, 14], read by diurnal processes (null: everybody at UTC)",
        json_schema_extra={
            "allowed": "one offset for all (e.g. `-5`), a list of `{share, offset}` (shares sum to 1), or the "
            "distribution `{dist: uniform, low, high}`"
        },
    )
    eligibility: Eligibility | None = Field(
        default=None, description="conditions besides availability for accepting work (null: availability only)"
    )

    @model_validator(mode="before")
    @classmethod
    def _presets(cls, raw: object) -> object:
        return _apply_presets(raw)

    @model_validator(mode="after")
    def _check(self) -> Population:
        tz = self.timezones
        if isinstance(tz, list):
            total = sum(z.share for z in tz)
            if not tz or abs(total - 1.0) > 1e-6:
                raise ValueError(f"timezones: shares must sum to 1, got {total:g}")
        elif isinstance(tz, (int, float)) and not -12 <= tz <= 14:
            raise ValueError(f"timezones: a UTC offset lies in [-12, 14] hours, got {tz:g}")
        if tz is not None and not self.uses_local_time():
            raise ValueError(
                "timezones: only diurnal processes read the local time of day, and none is set "
                "(population.availability.kind diurnal or population.eligibility.unmetered.kind diurnal); "
                "remove timezones or use one"
            )
        e = self.eligibility
        a = self.availability
        by_round = (
            (a.kind == "bernoulli" and a.slot_s is None)
            or (a.kind == "markov" and a.mean_cycle_rounds is not None)
            or (a.kind == "cyclic" and a.period_rounds is not None)
            or a.kind == "cluster_dropout"
        )
        if e is not None and by_round:
            raise ValueError(
                "eligibility: its conditions run in virtual time and are combined with an availability process in "
                f"virtual time; availability kind {a.kind} here counts sync rounds: use bernoulli with slot_s, markov "
                "with mean_cycle_s, cyclic with period_s, diurnal, trace or always"
            )
        if e is not None and e.charging and (self.battery is None or self.battery.charging is None):
            raise ValueError(
                "eligibility.charging: needs the plugged-in windows of population.battery.charging; set them "
                "(e.g. battery: {capacity_j: 40000, charging: {period_s: 86400, plugged_fraction: 0.3}})"
            )
        return self

    def uses_local_time(self) -> bool:
        unmetered = self.eligibility.unmetered if self.eligibility else None
        return self.availability.kind == "diurnal" or (unmetered is not None and unmetered.kind == "diurnal")
