"""What every availability kind shares: its registration (:class:`AvailabilityKind`), what a builder
may read besides its own section (:class:`Draw`), the per-client probability ``p`` most kinds take,
and the eligibility combinator :class:`AllOf`.

No torch and no SimPy here: the schema imports this package while it validates a scenario.
"""

from __future__ import annotations

import bisect
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Iterator, Literal, Union

import numpy as np
from pydantic import BeforeValidator, Field

from asyncfl.errors import ConfigError
from asyncfl.sections import (
    Constant,
    LogNormal,
    Pareto,
    Section,
    Tiers,
    Uniform,
    _number_means_constant,
    _probability_bounds,
)
from asyncfl.seeding import LazyStream, StreamFamily, stream

INF = math.inf
HOUR_S = 3600.0
DAY_S = 86400.0
LABEL_MIX_STREAM = 0xFFFF_FFF0  # stream ids above any client id: FedAU's class weights m

__all__ = ["INF", "HOUR_S", "DAY_S", "AllOf", "AvailabilityKind", "AvailabilityModel", "Draw", "Section", "SwitchPath"]


@dataclass(frozen=True)
class AvailabilityKind:
    """One availability kind, registered by its module as ``KIND = AvailabilityKind(...)``; the package
    finds every module of this folder that sets ``KIND`` (adding a kind adds one file).

    ``section``: the YAML keys (a :class:`Section` whose ``kind: Literal["name"]`` names the kind);
    it joins the schema's ``population.availability`` union.
    ``build(spec, draw)``: what is shared by all clients is drawn here, once; returns ``model(i)``, client
    i's model, an :class:`AvailabilityModel` (runs build through :meth:`models`, which checks that).
    ``probabilities(spec, draw)``: every client's p_i (clients.csv's ``availability_p``, fedavg_known_p's
    weights); NaN where the kind has none.
    ``counts_rounds(spec)``: what makes this spec decide once per sync round, as errors name it (e.g.
    ``"period_rounds"``), or None when it runs in virtual time.  Such a spec is refused with
    ``server.mode k_async`` and with ``population.eligibility``.
    ``k_async_error(spec)``: the k_async refusal when the generic one (from ``counts_rounds``) reads wrong.
    ``check_files(spec, clients)``: reads the files the spec names, so that ``validate`` reports their errors.
    ``local_time``: reads the client's local time of day (``population.timezones`` applies).
    ``seeded``: the pattern depends on the scenario's seed (False: a fixed pattern).
    ``unmetered_order``: the kind can also be ``population.eligibility.unmetered`` (an on/off process of
    an unmetered network, in virtual time), at this place in that union; None: it cannot.
    ``examples``: (name, spec) pairs the contract checks (asyncfl.testing.availability) hold to
    the protocol; a kind without them fails it.  ``order``: place in the schema's union (the reference
    and error messages list kinds in this order; new kinds go last).
    """

    section: type[Section]
    build: Callable[[Any, Draw], Callable[[int], Any]]
    probabilities: Callable[[Any, Draw], list[float]]
    counts_rounds: Callable[[Any], str | None] = lambda spec: None
    k_async_error: Callable[[Any], str | None] | None = None
    check_files: Callable[[Any, int], None] | None = None
    local_time: bool = False
    seeded: bool = True
    unmetered_order: int | None = None
    examples: tuple[tuple[str, dict], ...] = ()
    order: int = 1000

    @property
    def name(self) -> str:
        return self.section.model_fields["kind"].annotation.__args__[0]

    def models(self, spec: Any, draw: Draw) -> Callable[[int], AvailabilityModel]:
        """``build(spec, draw)``, each client's model checked to be an :class:`AvailabilityModel` (whose
        defaults the simulation relies on): a plug-in's model that is not is a :class:`ConfigError`."""
        build = self.build(spec, draw)

        def model(i: int) -> AvailabilityModel:
            built = build(i)
            if not isinstance(built, AvailabilityModel):
                raise ConfigError(
                    f"{draw.where}: kind {self.name!r} built a {type(built).__name__}, which is not an "
                    "asyncfl.sim.availability.AvailabilityModel; subclass it (it gives the defaults of why_not, "
                    "next_cut, earliest_online, next_online_within, offline_seconds and online_in_rounds)."
                )
            return built

        return model

    def check_k_async(self, spec: Any) -> None:
        """Raise :class:`ConfigError` if ``spec`` cannot run with server.mode k_async (no sync rounds there)."""
        if self.k_async_error is not None:
            problem = self.k_async_error(spec)
        else:
            what = self.counts_rounds(spec)
            problem = what and (
                f"population.availability: {what} counts sync rounds, which server.mode k_async does not have; use "
                "the continuous-time form (mean_cycle_s / period_s)"
            )
        if problem:
            raise ConfigError(problem)


@dataclass(frozen=True)
class Draw:
    """What a kind's builder may read besides its own section.

    ``label_histograms`` ([clients, classes], normalised; None in timing-only runs) for patterns
    correlated with the data (FedAU); ``clusters`` (cluster id per client, from the ``clusters``
    partition; None: one cluster) for FL-FDMS's cluster dropout; ``local0``: every client's local
    seconds after midnight at virtual time 0 (None: ``start_s_of_day``, UTC, for all); ``stream_id`` > 0
    keys a second process of the same client (the unmetered network) on streams of its own."""

    num_clients: int
    seed: int
    label_histograms: np.ndarray | None = None
    clusters: np.ndarray | None = None
    local0: list[float] | None = None
    start_s_of_day: float = 0.0
    stream_id: int = 0

    @property
    def where(self) -> str:
        """The YAML path of the section being built, for error messages."""
        return "population.availability" if not self.stream_id else "population.eligibility.unmetered"

    def stream(self, purpose: str) -> np.random.Generator:
        """The process's shared stream of ``purpose`` (a second process has its own)."""
        return stream(self.seed, purpose, *((self.stream_id,) if self.stream_id else ()))

    def client_streams(self) -> Callable[[int], LazyStream]:
        """``own(i)``: client i's own availability stream, built on first use."""
        if self.stream_id:
            return lambda i: LazyStream(self.seed, "availability", self.stream_id, i)
        return StreamFamily(self.seed, "availability").lazy  # client i's stream(seed, "availability", i)

    def p(self, spec: Probability) -> list[float]:
        """Every client's p_i drawn from ``spec`` (a number, a distribution or label-correlated)."""
        if spec.dist == "label_correlated":
            return label_correlated_p(spec, self.label_histograms, self.seed)
        return [float(x) for x in spec.sample(self.stream("availability"), self.num_clients)]


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


def p_in_unit_interval(p: Probability, what: str = "p") -> Probability:
    if p.dist != "label_correlated":
        _probability_bounds(p, what)
    return p


def label_correlated_p(spec: LabelCorrelated, label_histograms: np.ndarray | None, seed: int) -> list[float]:
    """p_n = min(1, max(floor, scale * L * sum_l dhat_{n,l} m_l)), m ~ Dirichlet(alpha) (FedAU)."""
    if label_histograms is None:
        raise ConfigError(
            "population.availability.p: label_correlated needs the clients' label histograms "
            "(not available here: is this a timing-only run?)."
        )
    hist = np.asarray(label_histograms, dtype=np.float64)
    classes = hist.shape[1]
    m = stream(seed, "availability", LABEL_MIX_STREAM).dirichlet(np.full(classes, spec.dirichlet_alpha))
    p = np.clip(spec.scale * classes * (hist @ m), spec.floor, 1.0)
    return [float(x) for x in p]


class AvailabilityModel(ABC):
    """One client's availability process: pure functions of (t, round) given the client's own stream.

    A model answers three questions (abstract: a subclass that leaves one out cannot be built):

    ``online(t, rnd)``        is the client reachable at time t (in sync round rnd)?
    ``next_offline(t, rnd)``  the first time >= t at which an online client drops (t if offline; inf: never)
    ``next_online(t)``        the first time >= t at which it is online (round-indexed models: t)

    and says whether it is ``round_indexed`` (decides once per sync round; default False).  The other
    capabilities have defaults that are right for any model; a model overrides one where it can say more
    or answer faster (each built-in override says why):

    ``why_not(t, rnd)``                the reason the client cannot take work at t (None when it can):
                                       ``"offline"``; eligibility (:class:`AllOf`) names the condition
    ``next_cut(t, rnd)``               (time, reason) at which a task started at t is cut:
                                       (``next_offline(t, rnd)``, ``"offline"``)
    ``earliest_online(t)``             a lower bound of ``next_online(t)`` for the dispatcher to look
                                       again then: ``next_online(t)`` itself
    ``next_online_within(t, until)``   ``next_online(t)`` where it is not after ``until``, else any time
                                       after ``until``: ``next_online(t)``
    ``offline_seconds(until)``         offline time in [0, until] (clients.csv's ``offline_s``) of a
                                       continuous-time model: summed along its switches (:func:`walk_offline`)
    ``online_in_rounds(rounds, starts)`` a round-indexed model's state (1 online, 0 offline) in each of
                                       ``rounds``, begun at ``starts``: ``online(start, round)`` round by round
    ``schedule``                       a schedule shared by every client of the kind (``dropped(rnd)``: the
                                       ids offline in round rnd; the model's ``client`` is its id), so that
                                       all clients' offline time is measured in one pass: None
    """

    round_indexed: bool = False
    schedule: Any = None

    @abstractmethod
    def online(self, t: float, rnd: int) -> bool: ...

    @abstractmethod
    def next_offline(self, t: float, rnd: int) -> float: ...

    @abstractmethod
    def next_online(self, t: float) -> float: ...

    def why_not(self, t: float, rnd: int) -> str | None:
        return None if self.online(t, rnd) else "offline"

    def next_cut(self, t: float, rnd: int) -> tuple[float, str]:
        return self.next_offline(t, rnd), "offline"

    def earliest_online(self, t: float) -> float:
        return self.next_online(t)

    def next_online_within(self, t: float, until: float) -> float:
        return self.next_online(t)

    def offline_seconds(self, until: float) -> float:
        total = 0.0  # plain adds: sum() compensates on 3.12+
        for start, end in walk_offline(self, until):
            total += end - start
        return total

    def online_in_rounds(self, rounds: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return np.asarray([self.online(s, r) for s, r in zip(starts.tolist(), rounds.tolist())])


def walk_offline(model: AvailabilityModel, until: float) -> Iterator[tuple[float, float]]:
    """The offline periods in [0, until] of a continuous-time model, found along its on/off switches."""
    t = 0.0
    while t < until:
        if model.online(t, 0):
            nxt = model.next_offline(t, 0)
            if nxt <= t:
                return
        else:
            nxt = model.next_online_within(t, until)  # eligibility: no walk past until
            yield t, min(nxt, until)
        t = nxt


class SwitchPath(AvailabilityModel):
    """A model whose on/off path is a list of flip times drawn on demand (Markov, Diurnal): state i
    holds on [s_i, s_{i+1}) of ``switches``, alternating from ``first_online``; ``_extend_past(t)``
    draws the path until it is known past t."""

    switches: list[float]
    first_online: bool

    @abstractmethod
    def _extend_past(self, t: float) -> None: ...

    def _state(self, i: int) -> bool:
        return self.first_online if i % 2 == 0 else not self.first_online

    def _index(self, t: float) -> int:
        self._extend_past(t)
        return bisect.bisect_right(self.switches, t) - 1

    def online(self, t: float, rnd: int) -> bool:
        return self._state(self._index(t))

    def offline_seconds(self, until: float) -> float:
        """Offline time in [0, until]."""
        self.online(until, 0)  # draws the path past ``until``
        switches, total = self.switches, 0.0
        offline = not self.first_online
        for i, start in enumerate(switches):
            if start >= until:
                break
            if offline:
                end = switches[i + 1] if i + 1 < len(switches) else until
                total += min(end, until) - start
            offline = not offline
        return total


class AllOf(AvailabilityModel):
    """Eligibility as production FL defines it (Bonawitz et al. 2019): the client takes work only
    while every condition holds (available/idle, charging, on an unmetered network).  Each condition
    is an availability-like process; ``reasons`` names the failure recorded when one ends mid-task
    (the first component is the client's availability, reason ``offline``)."""

    round_indexed = False

    def __init__(self, parts: list, reasons: list[str]) -> None:
        self.parts, self.reasons = parts, reasons

    def online(self, t: float, rnd: int) -> bool:
        return all(m.online(t, rnd) for m in self.parts)

    def why_not(self, t: float, rnd: int) -> str | None:
        """The first condition that fails at t (its reason), None when eligible."""
        for m, reason in zip(self.parts, self.reasons):
            if not m.online(t, rnd):
                return reason
        return None

    def next_cut(self, t: float, rnd: int) -> tuple[float, str]:
        """(time, reason) of the first condition to end at or after t; ties go to the earlier part."""
        best, why = INF, self.reasons[0]
        for m, reason in zip(self.parts, self.reasons):
            cut = m.next_offline(t, rnd)
            if cut < best:
                best, why = cut, reason
        return best, why

    def next_offline(self, t: float, rnd: int) -> float:
        return self.next_cut(t, rnd)[0]

    def earliest_online(self, t: float) -> float:
        """A lower bound of :meth:`next_online` at one question per condition: the latest of the
        conditions' own next online times (every one must hold, so none can come earlier).  The
        dispatcher looks again then instead of walking the conditions to their joint time for every
        idle client (:class:`asyncfl.sim.dispatch.ChargedIndex`)."""
        return max(m.next_online(t) for m in self.parts)

    def next_online(self, t: float) -> float:
        """The first time >= t at which every condition holds: move to the latest of the parts'
        next online times until all of them hold there.  Conditions that never hold together within
        ``JOINT_HORIZON_S`` of t (disjoint windows) count as never: inf."""
        return self.next_online_within(t, INF)

    def next_online_within(self, t: float, until: float) -> float:
        """:meth:`next_online` where that is not after ``until``, else some time after ``until``:
        the walk stops there (measuring offline time up to the run's end needs no more)."""
        give_up = t + JOINT_HORIZON_S
        while t <= give_up:
            later = max(m.next_online(t) for m in self.parts)
            if later == INF or later > until:
                return later
            if all(m.online(later, 0) for m in self.parts):
                return later
            t = later if later > t else math.nextafter(t, INF)
        return INF


JOINT_HORIZON_S = 400 * DAY_S
