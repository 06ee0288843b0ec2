"""Build every client's device (profile, availability, battery) from the scenario's ``population``."""

from __future__ import annotations

import math
from typing import Callable, Iterator, Literal, Union

import numpy as np
from pydantic import Field, model_validator

from asyncfl.errors import ConfigError
from asyncfl.sections import Section  # also types the scenario sections assembled above (config)
from asyncfl.seeding import StreamFamily, stream
from asyncfl.sim.availability import DAY_S, AllOf, Availability, Draw, kind_of
from asyncfl.sim.availability.cyclic import Cyclic
from asyncfl.sim.battery import Battery, DeviceBattery
from asyncfl.sim.clients import ClientDevice
from asyncfl.sim.profiles import draw_profiles
from asyncfl.sim.stream_columns import bernoulli_draws


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
            raise ConfigError(f"low ({self.low}) must not exceed high ({self.high})")
        return self


TimeZones = Union[float, list[ZoneShare], UniformZones]
"""One UTC offset for everybody, a list of ``{share, offset}`` (shares sum to 1), or ``{dist: uniform, low, high}``."""


class Clients:
    """The population's devices, each built the first time it is looked up (``clients[i]``,
    iteration).  At 10^6 clients building every ClientDevice up front (profile, availability model,
    streams) took about a third of a timing-only run in which most clients never act.  A client is
    built exactly when the simulation first touches it, so its state is what an eagerly built one
    would have; the report reads the others' columns (:meth:`profile_columns`, :meth:`batteries`,
    :meth:`offline_in_rounds`) without building them.  Only built clients are held (a dict by id):
    a client never touched costs its drawn columns alone, about 8 bytes per number."""

    def __init__(
        self,
        count: int,
        build: Callable[[int], ClientDevice],
        profiles,
        batteries: list | None,
        availability=None,
        round_draws: tuple[int, float | None] | None = None,
        probabilities: Callable[[], list[float]] | None = None,
    ) -> None:
        """``batteries``: one per client, or None when the population has none; ``round_draws``:
        (seed, slot_s) when every client's availability is Bernoulli on its own stream
        (asyncfl/sim/availability/bernoulli.py), which lets :meth:`offline_in_rounds` draw the
        states of clients never built in columns."""
        self._count = count
        self._devices: dict[int, ClientDevice] = {}
        self._build, self._profiles, self._batteries = build, profiles, batteries
        self._availability = availability  # i -> client i's availability model (what build(i) gives it)
        self.round_draws, self._probabilities = round_draws, probabilities

    def availability_of(self, i: int):
        """Client i's availability model: the built client's own, or a fresh one for a client never
        built (it never acted, so a fresh model answers as its own would have)."""
        device = self._devices.get(i)
        return device.availability if device is not None else self._availability(i)

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i: int) -> ClientDevice:
        device = self._devices.get(i)
        if device is None:
            if not 0 <= i < self._count:
                raise IndexError(f"client {i} out of range 0..{self._count - 1}")
            device = self._devices[i] = self._build(i)
        return device

    def __iter__(self) -> Iterator[ClientDevice]:
        return (self[i] for i in range(self._count))

    def speeds(self) -> np.ndarray:
        """Every client's ``samples_per_s`` in id order, read without building anyone."""
        return self.profile_columns()[0]

    def profile_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(samples_per_s, uplink and downlink bytes per second, latency_s) of every client in id order."""
        columns = getattr(self._profiles, "columns", None)
        if columns is not None:
            return columns
        fields = ("samples_per_s", "uplink_bytes_per_s", "downlink_bytes_per_s", "latency_s")
        return tuple(np.array([getattr(p, f) for p in self._profiles], dtype=np.float64) for f in fields)

    def batteries(self) -> list[DeviceBattery | None] | None:
        """Every client's battery (a built client holds the same object), in id order; None: no batteries."""
        return self._batteries

    def built(self) -> Iterator[ClientDevice]:
        """The clients built so far (those the simulation touched), in id order."""
        return (self._devices[i] for i in sorted(self._devices))

    def built_ids(self) -> np.ndarray:
        """The ids of the clients built so far, ascending."""
        return np.array(sorted(self._devices), dtype=np.int64)

    def slotted_bernoulli(self) -> tuple[int, float, list[float]] | None:
        """(seed, slot_s, every client's p_i) when every client is online per time slot with its own
        probability and none has a battery (asyncfl.sim.slot_index dispatches from columns), else None."""
        if self.round_draws is None or self.round_draws[1] is None or self._batteries is not None:
            return None
        return self.round_draws[0], self.round_draws[1], self._probabilities()

    def offline_in_rounds(self, ids: np.ndarray, p, meter) -> np.ndarray | None:
        """Seconds offline in [0, ``meter.until``] of each client of ``ids`` (never built: no task ran on
        into a later round), as :class:`asyncfl.sim.availability.measure.OfflineMeter` counts them, with
        the same floating-point operations; ``p``: every client's p_i.  None unless availability is
        Bernoulli (``round_draws``): client i is online in round (or slot) r when draw r of its stream is
        below p_i.  Per round: ``lengths[states == 0].sum()`` over the meter's round spans; per slot
        (bernoulli.py's ``offline_seconds``): the offline slots before the one holding ``until`` times
        slot_s, plus the part of that slot up to ``until`` if offline there."""
        if self.round_draws is None:
            return None
        seed, slot_s = self.round_draws
        out = np.zeros(len(ids), dtype=np.float64)
        if slot_s is None:
            if not len(meter.round_ids):
                return out
            draws = int(meter.round_ids.max()) + 1
        else:
            last = int(meter.until // slot_s)
            draws, partial = last + 1, meter.until - last * slot_s
        p = np.asarray(p, dtype=np.float64)
        for start in range(0, len(ids), OFFLINE_BLOCK):
            block = ids[start : start + OFFLINE_BLOCK]
            offline = ~bernoulli_draws(seed, "availability", block, p[block], draws)
            if slot_s is None:
                seconds = _masked_row_sums(offline[:, meter.round_ids], meter.lengths)
            else:
                counted = np.count_nonzero(offline[:, :last], axis=1).astype(np.float64) * slot_s
                seconds = counted + np.where(offline[:, last], partial, 0.0)
            out[start : start + len(block)] = seconds
        return out


OFFLINE_BLOCK = 1 << 16


def _masked_row_sums(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values[mask[r]].sum()`` for every row r, bit for bit: numpy sums a row of a C-contiguous
    array as it sums the same numbers in a 1-D array (pairwise), so rows with the same number of
    selected values are compacted into one [rows, m] array and summed along rows."""
    counts = mask.sum(axis=1)
    out = np.zeros(len(mask), dtype=np.float64)
    full = np.broadcast_to(values, mask.shape)
    for m in np.unique(counts).tolist():
        if m == 0:
            continue
        rows = np.flatnonzero(counts == m)
        out[rows] = full[rows][mask[rows]].reshape(len(rows), m).sum(axis=1)
    return out


def build_clients(
    population: Section,
    num_clients: int,
    seed: int,
    label_histograms: np.ndarray | None = None,
    clusters: np.ndarray | None = None,
    start_s_of_day: float = 0.0,
) -> Clients:
    """Every client's device, built on first use.  ``label_histograms`` ([clients, classes],
    normalised) is there for availability patterns correlated with the data (FedAU); ``clusters``
    (cluster id per client, from the ``clusters`` partition) for FL-FDMS's cluster dropout;
    ``start_s_of_day``: UTC seconds after midnight at virtual time 0 (``clock.start_time``)."""
    profiles = draw_profiles(population, num_clients, stream(seed, "profiles"))
    batteries = build_batteries(population.battery, num_clients, seed)
    model = eligibility_builder(population, num_clients, seed, label_histograms, clusters, start_s_of_day, batteries)
    jitter = StreamFamily(seed, "jitter")

    def build(i: int) -> ClientDevice:
        return ClientDevice(i, profiles[i], model(i), jitter.lazy(i), batteries[i] if batteries else None)

    spec = population.availability
    bernoulli = spec.kind == "bernoulli" and population.eligibility is None
    round_draws = (seed, spec.slot_s) if bernoulli else None

    def probabilities() -> list[float]:
        return participation_probabilities(spec, num_clients, seed, label_histograms)

    return Clients(num_clients, build, profiles, batteries, model, round_draws, probabilities)


UNMETERED_STREAM = 0xFFFF_FFF2  # offset of the unmetered-network streams: availability streams stay as they were


def utc_offsets(spec, num_clients: int, seed: int) -> list[float]:
    """Every client's UTC offset in hours from ``population.timezones`` (None: all at UTC)."""
    if spec is None:
        return [0.0] * num_clients
    if isinstance(spec, (int, float)):
        return [float(spec)] * num_clients
    rng = stream(seed, "timezones")
    if isinstance(spec, list):
        shares = np.array([z.share for z in spec])
        offsets = np.array([z.offset for z in spec])
        return offsets[rng.choice(len(spec), size=num_clients, p=shares / shares.sum())].tolist()
    return rng.uniform(spec.low, spec.high, size=num_clients).tolist()


def eligibility_builder(
    population: Section,
    num_clients: int,
    seed: int,
    label_histograms: np.ndarray | None,
    clusters: np.ndarray | None,
    start_s_of_day: float,
    batteries: list,
) -> Callable[[int], object]:
    """``model(i)``: client i's availability, or (``population.eligibility``) an :class:`AllOf`
    of availability, plug windows and the unmetered-network process."""
    offsets = utc_offsets(population.timezones, num_clients, seed) if population.uses_local_time() else None
    local0 = None if offsets is None else [(start_s_of_day + 3600.0 * o) % DAY_S for o in offsets]
    available = availability_builder(
        population.availability, num_clients, seed, label_histograms, clusters, local0, start_s_of_day
    )
    rules = population.eligibility
    if rules is None:
        return available
    parts = [available]
    if rules.charging:
        charging = population.battery.charging
        parts.append(lambda i: Cyclic(charging.plugged_fraction, charging.period_s, batteries[i].phase))
    if rules.unmetered is not None:
        parts.append(
            availability_builder(
                rules.unmetered, num_clients, seed, None, None, local0, start_s_of_day, UNMETERED_STREAM
            )
        )
    reasons = ["offline", *rules.reasons()]  # the parts' order: availability, charging, network
    return lambda i: AllOf([part(i) for part in parts], reasons)


def participation_probabilities(
    spec: Availability, num_clients: int, seed: int, label_histograms: np.ndarray | None = None, stream_id: int = 0
) -> list[float]:
    """The per-client p_i of a spec, as its kind computes it (clients.csv's ``availability_p``,
    fedavg_known_p's weights): the drawn (or label-correlated) p of Bernoulli/Markov/diurnal, the
    realised rate of cyclic over whole rounds, 1 - alpha for cluster dropout, 1 for always-on and NaN
    for traces (asyncfl/sim/availability/, one module per kind)."""
    draw = Draw(num_clients, seed, label_histograms, stream_id=stream_id)
    return kind_of(spec).probabilities(spec, draw)


def availability_builder(
    spec: Availability,
    num_clients: int,
    seed: int,
    label_histograms: np.ndarray | None = None,
    clusters: np.ndarray | None = None,
    local0: list[float] | None = None,
    start_s_of_day: float = 0.0,
    stream_id: int = 0,
) -> Callable[[int], object]:
    """``model(i)``: client i's availability model (everything shared is drawn here, once), built by
    the spec's kind.  ``local0``: every client's local seconds after midnight at virtual time 0 (None:
    UTC, ``start_s_of_day``), for diurnal processes; ``stream_id`` > 0 keys a second process of the
    same client (the unmetered network) on streams of its own."""
    draw = Draw(num_clients, seed, label_histograms, clusters, local0, start_s_of_day, stream_id)
    return kind_of(spec).models(spec, draw)


def build_availability(
    spec: Availability,
    num_clients: int,
    seed: int,
    label_histograms: np.ndarray | None = None,
    clusters: np.ndarray | None = None,
) -> list[object]:
    """Every client's availability model, built now."""
    model = availability_builder(spec, num_clients, seed, label_histograms, clusters)
    return [model(i) for i in range(num_clients)]


def build_batteries(spec: Battery | None, num_clients: int, seed: int) -> list[DeviceBattery] | None:
    """Every client's battery, or None when the population has none."""
    if spec is None:
        return None
    rng = stream(seed, "profiles", 1)
    levels = spec.initial_level.sample(rng, num_clients)
    charging = spec.charging
    phases = rng.uniform(0, charging.period_s, size=num_clients) if charging else [0.0] * num_clients
    return [
        DeviceBattery(
            spec.capacity_j,
            float(levels[i]) * spec.capacity_j,
            spec.min_level,
            charge_w=charging.charge_w if charging else 0.0,
            plug_period_s=charging.period_s if charging else math.inf,
            plugged_s=charging.plugged_fraction * charging.period_s if charging else 0.0,
            plug_phase_s=float(phases[i]),
        )
        for i in range(num_clients)
    ]


# Peak resident bytes per client of a timing-only run with the default outputs (figures on), measured by
# benchmarks/performance/population_memory.py (rounded up): (every client's drawn columns, whether it ever
# acts or not: profiles, p_i, clients.csv's columns, and the figures reading clients.csv back; and more for
# each client the simulation touches: its device, availability model, streams, statistics, last plan).
# Measured 2026-11 with the population in columns: plain drawn 278 (figures off) / 741 (on), built 4,510;
# rich drawn 1,184 (figures off; on: plus plain's 463 for the figures), built 10,297.
PLAIN_BYTES_PER_CLIENT = (800, 4_600)
# with a battery, eligibility processes or time zones (the measured one has all three)
RICH_BYTES_PER_CLIENT = (1_700, 10_400)


def bytes_per_client(population: Section) -> tuple[int, int]:
    """(bytes per drawn client, more bytes per touched client) of ``population``."""
    rich = population.battery is not None or population.eligibility is not None or population.uses_local_time()
    return RICH_BYTES_PER_CLIENT if rich else PLAIN_BYTES_PER_CLIENT


def population_bytes(population: Section, num_clients: int, built_clients: int) -> int:
    """About the memory a run of ``num_clients`` clients needs for its population, of which at most
    ``built_clients`` are ever touched (a K-async dispatcher looks at all of them; a sync round at
    ``clients_per_round``); computed, not allocated, so it can refuse a population before it is built."""
    drawn, built = bytes_per_client(population)
    return num_clients * drawn + min(built_clients, num_clients) * built
