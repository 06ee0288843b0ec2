"""What happened to each client, read back from a run directory.

``events.jsonl`` gives the phases of every task (download / compute / upload start times, then
``arrive`` or ``fail`` with its reason) and every aggregation.  Offline periods are not events (the
simulator only *asks* the availability process), so :func:`offline_intervals` re-derives them from
the run's ``config.yaml``: availability processes are pure functions of (seed, client, time, round),
so rebuilding them replays exactly the on/off pattern the run saw.  The result is cached in
``availability.csv`` (``client,start_s,end_s`` per offline interval) so a later ``plot`` reads it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import yaml

from asyncfl.results import read_csv

PHASES = ("download", "compute", "upload")
END_EVENTS = ("arrive", "fail")
MAX_INTERVALS = 20_000  # per client: guards a pathological availability pattern


@dataclass(frozen=True)
class Segment:
    client: int
    phase: str  # download | compute | upload
    start: float
    end: float
    failed: bool  # the task this phase belongs to failed (its work was lost)


@dataclass(frozen=True)
class Failure:
    client: int
    time: float
    reason: str


def read_events(run_dir: Path) -> list[dict]:
    path = run_dir / "events.jsonl"
    if not path.is_file():
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def task_segments(events: Iterable[dict]) -> tuple[list[Segment], list[Failure]]:
    """Every phase of every task as a [start, end) segment, and every failure."""
    open_tasks: dict[int, list[tuple[str, float]]] = {}
    segments: list[Segment] = []
    failures: list[Failure] = []
    for e in events:
        client, kind = e.get("client"), e["event"]
        if client is None:
            continue
        if kind in PHASES:
            open_tasks.setdefault(client, []).append((kind, float(e["t"])))
        elif kind in END_EVENTS:
            phases = open_tasks.pop(client, [])
            ends = [start for _, start in phases[1:]] + [float(e["t"])]
            failed = kind == "fail"
            segments += [Segment(client, p, s, t, failed) for (p, s), t in zip(phases, ends)]
            if failed:
                failures.append(Failure(client, float(e["t"]), e.get("reason") or "unknown"))
    return segments, failures


def aggregation_times(events: Iterable[dict]) -> list[float]:
    return [float(e["t"]) for e in events if e["event"] == "aggregate"]


def update_staleness(events: Sequence[dict], rounds: Sequence[dict[str, str]]) -> list[int]:
    """Staleness of every aggregated update: version before the aggregation - base version.

    Arrivals queue in log order (an arrival logged at the same instant as an aggregation counts as
    before it, as the servers do); dropped-as-stale arrivals leave the queue; aggregation number n
    (``round`` n in rounds.csv, producing version n) takes the ``received`` oldest queued arrivals.
    """
    received = {int(r["round"]): int(r["received"]) for r in rounds}
    order = {"arrive": 0, "drop_stale": 1, "fail": 1, "aggregate": 2}
    ranked = sorted(enumerate(events), key=lambda ie: (float(ie[1]["t"]), order.get(ie[1]["event"], 1), ie[0]))
    queue: list[dict] = []
    out: list[int] = []
    for _, e in ranked:
        if e["event"] == "arrive":
            queue.append(e)
        elif e["event"] == "drop_stale":
            i = next((i for i, q in enumerate(queue) if q["client"] == e["client"]), None)
            if i is not None:
                queue.pop(i)
        elif e["event"] == "aggregate":
            version = int(e["round"])
            taken, queue = queue[: received.get(version, len(queue))], queue[received.get(version, len(queue)) :]
            out += [version - 1 - int(q["round"]) for q in taken]
    return out


def offline_intervals(run_dir: Path, clients: Sequence[int], until: float) -> dict[int, list[tuple[float, float]]]:
    """Offline periods of ``clients`` in [0, until], from availability.csv or rebuilt from config.yaml."""
    cached = _read_cache(run_dir / "availability.csv", clients, until)
    if cached is not None:
        return cached
    models = _availability_models(run_dir)
    rounds = [(float(r["started"]), float(r["time"]), int(r["round"]) - 1) for r in read_csv(run_dir / "rounds.csv")]
    out = {c: _offline(models[c], until, rounds) for c in clients}
    _write_cache(run_dir / "availability.csv", out, until)
    return out


def _availability_models(run_dir: Path) -> list[object]:
    from asyncfl.config import validate_scenario
    from asyncfl.learn.partition import cluster_of_clients
    from asyncfl.sim.population import build_availability

    s = validate_scenario(yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8")), "config.yaml")
    spec, n = s.population.availability, s.data.clients
    histograms = None
    p = getattr(spec, "p", None)
    if getattr(p, "dist", None) == "label_correlated":  # FedAU: p depends on the clients' labels
        import numpy as np
        import torch

        from asyncfl.learn.federation import build_federation

        federation = build_federation(s.data, s.seed, torch.device("cpu"))
        histograms = np.stack([federation.label_histogram(c) for c in range(n)])
    part = s.data.partition
    clusters = cluster_of_clients(n, part.clusters) if part.kind == "clusters" else None
    return build_availability(spec, n, s.seed, histograms, clusters)


def _round_indexed(model: object) -> bool:
    from asyncfl.sim import availability as av

    if isinstance(model, av.Bernoulli):
        return model.slot_s is None
    return isinstance(model, (av.MarkovRounds, av.CyclicRounds, av.ClusterDropout))


def _offline(model: object, until: float, rounds: list[tuple[float, float, int]]) -> list[tuple[float, float]]:
    if _round_indexed(model):  # one state per round, held from the round's start to its close
        return [(s, e) for s, e, rnd in rounds if s < until and not model.online(s, rnd)]
    out: list[tuple[float, float]] = []
    t = 0.0
    while t < until and len(out) < MAX_INTERVALS:
        if model.online(t, 0):
            nxt = model.next_offline(t, 0)
            if nxt <= t:
                break
        else:
            nxt = model.next_online(t)
            out.append((t, min(nxt, until)))
        t = nxt
    return out


def _read_cache(path: Path, clients: Sequence[int], until: float) -> dict[int, list[tuple[float, float]]] | None:
    if not path.is_file():
        return None
    rows = read_csv(path)
    covered = {int(r["client"]) for r in rows if r["start_s"] == "" and float(r["end_s"]) >= until}
    if not set(clients) <= covered:
        return None
    out: dict[int, list[tuple[float, float]]] = {c: [] for c in clients}
    for r in rows:
        c = int(r["client"])
        if c in out and r["start_s"] != "":
            out[c].append((float(r["start_s"]), min(float(r["end_s"]), until)))
    return {c: [(s, e) for s, e in v if s < until] for c, v in out.items()}


def _write_cache(path: Path, intervals: dict[int, list[tuple[float, float]]], until: float) -> None:
    """One row per offline interval, plus one row per client with an empty start_s saying up to which
    time its intervals are complete."""
    from asyncfl.results import write_atomic

    lines = ["client,start_s,end_s"]
    for c, spans in sorted(intervals.items()):
        lines.append(f"{c},,{until:.6f}")
        lines += [f"{c},{s:.6f},{e:.6f}" for s, e in spans if math.isfinite(e)]
    write_atomic(path, "\n".join(lines) + "\n")
