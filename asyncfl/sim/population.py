"""Build every client's device (profile, availability, battery) from the scenario's ``population``."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from asyncfl.config import ConfigError
from asyncfl.config.population import Availability, LabelCorrelated, Population
from asyncfl.config.population import Battery as BatteryConfig
from asyncfl.seeding import LazyStream, StreamFamily, stream
from asyncfl.sim import availability as av
from asyncfl.sim.battery import Battery
from asyncfl.sim.clients import ClientDevice
from asyncfl.sim.profiles import draw_profiles
from asyncfl.sim.tracefiles import read_rows

LABEL_MIX_STREAM = 0xFFFF_FFF0  # stream ids above any client id: FedAU's class weights m
DROPOUT_STREAM = 0xFFFF_FFF1  # FL-FDMS's per-round dropout draws


class Clients:
    """The population's devices, each built the first time it is looked up (``clients[i]``,
    iteration).  At 10^6 clients building every ClientDevice up front (profile, availability model,
    streams) took about a third of a timing-only run in which most clients never act.  A client is
    built exactly when the simulation first touches it, so its state is what an eagerly built one
    would have; the report reads the others' columns (:meth:`profile_columns`, :meth:`batteries`)
    without building them."""

    def __init__(
        self, count: int, build: Callable[[int], ClientDevice], profiles, batteries: list, availability=None
    ) -> None:
        self._devices: list[ClientDevice | None] = [None] * count
        self._build, self._profiles, self._batteries = build, profiles, batteries
        self._availability = availability  # i -> client i's availability model (what build(i) gives it)

    def availability_of(self, i: int):
        """Client i's availability model: the built client's own, or a fresh one for a client never
        built (it never acted, so a fresh model answers as its own would have)."""
        device = self._devices[i]
        return device.availability if device is not None else self._availability(i)

    def __len__(self) -> int:
        return len(self._devices)

    def __getitem__(self, i: int) -> ClientDevice:
        device = self._devices[i]
        if device is None:
            device = self._devices[i] = self._build(i)
        return device

    def __iter__(self) -> Iterator[ClientDevice]:
        return (self[i] for i in range(len(self._devices)))

    def speeds(self) -> list[float]:
        """Every client's ``samples_per_s`` in id order, read without building anyone."""
        columns = getattr(self._profiles, "columns", None)
        return columns[0] if columns is not None else [p.samples_per_s for p in self._profiles]

    def profile_columns(self) -> tuple[list[float], list[float], list[float], list[float]]:
        """(samples_per_s, uplink and downlink bytes per second, latency_s) of every client in id order."""
        columns = getattr(self._profiles, "columns", None)
        if columns is not None:
            return columns
        fields = ("samples_per_s", "uplink_bytes_per_s", "downlink_bytes_per_s", "latency_s")
        return tuple([getattr(p, f) for p in self._profiles] for f in fields)

    def batteries(self) -> list[Battery | None]:
        """Every client's battery (a built client holds the same object), in id order."""
        return self._batteries

    def built(self) -> Iterator[ClientDevice]:
        """The clients built so far (those the simulation touched), in id order."""
        return (device for device in self._devices if device is not None)


def build_clients(
    population: Population,
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
        return ClientDevice(i, profiles[i], model(i), jitter.lazy(i), batteries[i])

    return Clients(num_clients, build, profiles, batteries, model)


UNMETERED_STREAM = 0xFFFF_FFF2  # offset of the unmetered-network streams: availability streams stay as they were


def _second(stream_id: int) -> tuple[int, ...]:
    """The extra stream key of a client's second process (0: none, its availability keeps its keys)."""
    return (stream_id,) if stream_id else ()


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
    population: Population,
    num_clients: int,
    seed: int,
    label_histograms: np.ndarray | None,
    clusters: np.ndarray | None,
    start_s_of_day: float,
    batteries: list,
) -> Callable[[int], object]:
    """``model(i)``: client i's availability, or (``population.eligibility``) an :class:`av.AllOf`
    of availability, plug windows and the unmetered-network process."""
    offsets = utc_offsets(population.timezones, num_clients, seed) if population.uses_local_time() else None
    local0 = None if offsets is None else [(start_s_of_day + 3600.0 * o) % av.DAY_S for o in offsets]
    available = availability_builder(
        population.availability, num_clients, seed, label_histograms, clusters, local0, start_s_of_day
    )
    rules = population.eligibility
    if rules is None:
        return available
    parts = [available]
    if rules.charging:
        charging = population.battery.charging
        parts.append(lambda i: av.Cyclic(charging.plugged_fraction, charging.period_s, batteries[i].phase))
    if rules.unmetered is not None:
        parts.append(
            availability_builder(
                rules.unmetered, num_clients, seed, None, None, local0, start_s_of_day, UNMETERED_STREAM
            )
        )
    reasons = ["offline", *rules.reasons()]  # the parts' order: availability, charging, network
    return lambda i: av.AllOf([part(i) for part in parts], reasons)


def participation_probabilities(
    spec: Availability, num_clients: int, seed: int, label_histograms: np.ndarray | None = None, stream_id: int = 0
) -> list[float]:
    """The per-client p_i of a spec: the drawn (or label-correlated) p of Bernoulli/Markov/cyclic,
    1 - alpha for cluster dropout (approximate when clusters protect clients), 1 for always-on and
    NaN for traces.  Cyclic over whole rounds gives the rate it realises, on-rounds / period (a
    client with p * period < 1 still shows up once a period); building its model from that rate
    gives the same on-rounds (the rule is idempotent)."""
    if spec.kind == "always":
        return [1.0] * num_clients
    if spec.kind == "trace":
        return [math.nan] * num_clients
    if spec.kind == "cluster_dropout":
        return [1.0 - round(spec.alpha * num_clients) / num_clients] * num_clients
    if spec.p.dist == "label_correlated":
        p = label_correlated_p(spec.p, label_histograms, seed)
    else:
        p = [float(x) for x in spec.p.sample(stream(seed, "availability", *_second(stream_id)), num_clients)]
    if spec.kind == "cyclic" and spec.period_rounds is not None:  # whole rounds: the rate it realises
        return [av.cyclic_on_rounds(x, spec.period_rounds) / spec.period_rounds for x in p]
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
    """``model(i)``: client i's availability model (everything shared is drawn here, once).
    ``local0``: every client's local seconds after midnight at virtual time 0 (None: UTC,
    ``start_s_of_day``), for diurnal processes; ``stream_id`` > 0 keys a second process of the same
    client (the unmetered network) on streams of its own."""
    if spec.kind == "always":
        return lambda i: av.Always()
    if spec.kind == "trace":
        intervals = read_availability_trace(spec.file, num_clients)
        return lambda i: av.Trace(intervals[i])
    if spec.kind == "cluster_dropout":
        ids = np.zeros(num_clients, dtype=np.int64) if clusters is None else np.asarray(clusters, dtype=np.int64)
        schedule = av.DropoutSchedule(spec.alpha, ids, lambda rnd: stream(seed, "availability", DROPOUT_STREAM, rnd))
        return lambda i: av.ClusterDropout(schedule, i)
    p = participation_probabilities(spec, num_clients, seed, label_histograms, stream_id)

    streams = StreamFamily(seed, "availability")  # client i's own stream(seed, "availability", i)

    def own(i: int) -> LazyStream:
        return streams.lazy(i) if not stream_id else LazyStream(seed, "availability", stream_id, i)

    if spec.kind == "diurnal":
        weights = spec.weights()
        reachable = sum(1 for w in weights if w > 0) / 24
        if max(p) > reachable + 1e-12:
            where = "population.availability" if not stream_id else "population.eligibility.unmetered"
            raise ConfigError(
                f"{where}.p: values up to {max(p):g} cannot be reached when only {reachable:g} of the "
                "day's hours have a positive weight in hourly; lower p or give more hours a weight."
            )
        starts = local0 if local0 is not None else [start_s_of_day % av.DAY_S] * num_clients
        return lambda i: av.Diurnal(p[i], av.hourly_probabilities(p[i], weights), spec.mean_cycle_s, starts[i], own(i))
    if spec.kind == "bernoulli":
        return lambda i: av.Bernoulli(p[i], own(i), spec.slot_s)
    if spec.kind == "markov":
        if spec.mean_cycle_rounds is not None:
            return lambda i: av.MarkovRounds(p[i], spec.mean_cycle_rounds, own(i))
        return lambda i: av.Markov(p[i], spec.mean_cycle_s, own(i))
    if spec.period_rounds is not None:
        phases = stream(seed, "phases").integers(0, spec.period_rounds, size=num_clients).tolist()
        return lambda i: av.CyclicRounds(p[i], spec.period_rounds, phases[i])
    cyclic_phases = stream(seed, "phases", *_second(stream_id)).uniform(0, spec.period_s, size=num_clients).tolist()
    return lambda i: av.Cyclic(p[i], spec.period_s, cyclic_phases[i])


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


def build_batteries(spec: BatteryConfig | None, num_clients: int, seed: int) -> list[Battery | None]:
    if spec is None:
        return [None] * num_clients
    rng = stream(seed, "profiles", 1)
    levels = spec.initial_level.sample(rng, num_clients)
    charging = spec.charging
    phases = rng.uniform(0, charging.period_s, size=num_clients) if charging else [0.0] * num_clients
    return [
        Battery(
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


def read_availability_trace(path: Path, num_clients: int) -> dict[int, list[tuple[float, float]]]:
    """CSV with header ``client,start_s,end_s``: each row one online interval; per client the
    intervals must be sorted and disjoint, and every client needs at least one row."""
    where = f"population.availability.file ({path})"
    intervals: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for line, row in read_rows(path, ("client", "start_s", "end_s"), where):
        try:
            client, start, end = int(row["client"]), float(row["start_s"]), float(row["end_s"])
        except (TypeError, ValueError):
            raise ConfigError(f"{where}, line {line}: client must be an integer, start_s and end_s numbers.") from None
        if not 0 <= client < num_clients:
            raise ConfigError(f"{where}, line {line}: client {client} is outside 0..{num_clients - 1} (data.clients).")
        if not (0 <= start < end) or not math.isfinite(start):
            raise ConfigError(f"{where}, line {line}: need 0 <= start_s < end_s, got {start:g}..{end:g}.")
        previous = intervals[client][-1] if intervals[client] else None
        if previous is not None and start < previous[1]:
            raise ConfigError(f"{where}, line {line}: intervals of client {client} are unsorted or overlap.")
        intervals[client].append((start, end))
    missing = sorted(set(range(num_clients)) - set(intervals))
    if missing:
        raise ConfigError(f"{where}: no interval for clients {missing[:10]}{' ...' if len(missing) > 10 else ''}.")
    return intervals
