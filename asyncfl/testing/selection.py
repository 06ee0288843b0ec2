"""The selection-policy contract as plain checks, run on a kind's own examples (``KIND.examples``).

Each example's section is validated the way a run validates it (inside a scenario for a kind of the
schema, by its own section otherwise), built with the kind's ``build`` and held to:

* ``select`` returns sorted, unique client ids, all among the request's candidates, of size
  ``min(count, len(candidates))`` (all candidates for a null count) when every client can take work
  (at most that for a kind whose registration says ``fills_count=False``), and never more than that
  when some are offline;
* the same request with the same rng seed gives the same answer (two policies built alike);
* ``state_dict`` round-trips: a fresh policy loading it answers the next request as the original;
* a short sync run (and a K-async one for kinds that list ``k_async``) works with it: every round
  asks at most ``clients_per_round`` clients, and the run reaches ``stop.rounds``.

Requests are made over a real population (asyncfl.sim.population) with synthetic feedback (losses,
durations) so that loss-based kinds have numbers to rank.  Every check takes the kind (its registered
name or its :class:`SelectionKind`) and optionally the name of one example (default: all of them).
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from asyncfl.config import validate_scenario
from asyncfl.runner.start import run_scenario
from asyncfl.sim.population import build_clients
from asyncfl.sim.selection import KINDS, ClientFeedback, SelectionKind, SelectionRequest
from asyncfl.testing.server_mode import merged, table

CLIENTS = 40
COUNTS = (None, 1, 7, CLIENTS)  # sample sizes asked (None: every candidate)
INTERMITTENT = {"kind": "markov", "p": 0.5, "mean_cycle_s": 30}


def kind_of(kind: str | SelectionKind) -> SelectionKind:
    if isinstance(kind, SelectionKind):
        return kind
    if kind not in KINDS:
        raise ValueError(f"no selection kind named {kind!r}; registered: {', '.join(KINDS)}")
    return KINDS[kind]


def validated(kind: SelectionKind, raw: dict):
    """The validated ``server.selection`` section of ``raw``."""
    if KINDS.get(kind.name) is kind:
        return validate_scenario({"data": {"clients": CLIENTS}, "server": {"selection": raw}}).server.selection
    return kind.section.model_validate(raw)


def _examples(kind, example: str | None) -> Iterator[tuple[SelectionKind, str, object]]:
    kind = kind_of(kind)
    chosen = [(n, raw) for n, raw in kind.examples if example is None or n == example]
    assert chosen, (
        f"selection kind {kind.name!r} has no example {example!r}"
        if example
        else f"selection kind {kind.name!r} registers no examples (SelectionKind.examples)"
    )
    for name, raw in chosen:
        yield kind, name, validated(kind, raw)


def population(availability: dict | None):
    sections = {"data": {"clients": CLIENTS}}
    if availability is not None:
        sections["population"] = {"availability": availability}
    return validate_scenario(sections).population


def feedback(seed: int) -> ClientFeedback:
    """Every client with numbers to rank, as after a few aggregations of a full run."""
    rng = np.random.default_rng(seed)
    fb = ClientFeedback.empty(CLIENTS, rng.integers(20, 200, CLIENTS))
    fb.loss[:] = rng.uniform(0.1, 2.5, CLIENTS)
    fb.loss_sq[:] = fb.loss**2 * rng.uniform(1.0, 1.5, CLIENTS)
    fb.last_round[:] = rng.integers(0, 5, CLIENTS)
    fb.duration_s[:] = rng.lognormal(1.0, 0.7, CLIENTS)
    fb.accuracy[:] = rng.uniform(0.2, 0.9, CLIENTS)
    fb.filled = True
    return fb


def requests(availability: dict | None, seed: int) -> Iterator[SelectionRequest]:
    """Requests over rounds 0..7 at times 0, 10, ..., with every count of :data:`COUNTS`."""
    clients = build_clients(population(availability), CLIENTS, seed)
    fb = feedback(seed)
    pick = np.random.default_rng(seed + 1)
    for rnd in range(8):
        candidates = np.sort(pick.choice(CLIENTS, size=int(pick.integers(1, CLIENTS + 1)), replace=False))
        count = COUNTS[rnd % len(COUNTS)]
        yield SelectionRequest(rnd, 10.0 * rnd, candidates, count, np.random.default_rng([seed, rnd]), clients, fb)


def check_examples_are_declared(kind, example: str | None = None) -> None:
    """The kind registers examples, of its own kind, under distinct names, and serves sync rounds."""
    kind = kind_of(kind)
    assert kind.examples, f"selection kind {kind.name!r} registers no examples (SelectionKind.examples)"
    for name, raw in kind.examples:
        assert raw.get("kind") == kind.name, f"{kind.name}: example {name!r} is of kind {raw.get('kind')!r}"
    names = [name for name, _ in kind.examples]
    assert len(set(names)) == len(names), f"{kind.name}: two examples share a name: {names}"
    assert kind.modes <= {"sync", "k_async"} and kind.modes, f"{kind.name}: modes {sorted(kind.modes)}"


def check_selects_sorted_unique_candidates_of_the_right_size(kind, example: str | None = None) -> None:
    for kind_, name, spec in _examples(kind, example):
        for availability, exact in ((None, True), (INTERMITTENT, False)):
            policy = kind_.build(spec, CLIENTS, 0)
            for request in requests(availability, seed=1):
                chosen = policy.select(request)
                assert all(isinstance(i, int) for i in chosen), f"{name}: ids must be ints, got {chosen!r}"
                assert chosen == sorted(set(chosen)), f"{name}: not sorted and unique: {chosen}"
                assert set(chosen) <= set(request.candidates.tolist()), f"{name}: chose a non-candidate: {chosen}"
                size = len(request.candidates) if request.count is None else min(request.count, len(request.candidates))
                if exact and kind_.fills_count:
                    assert len(chosen) == size, f"{name}: asked {request.count} of {len(request.candidates)}: {chosen}"
                else:
                    assert len(chosen) <= size, f"{name}: {len(chosen)} chosen, at most {size} allowed"


def check_same_seed_same_selection(kind, example: str | None = None) -> None:
    for kind_, name, spec in _examples(kind, example):
        first, second = kind_.build(spec, CLIENTS, 3), kind_.build(spec, CLIENTS, 3)
        answers = [
            (first.select(a), second.select(b)) for a, b in zip(requests(INTERMITTENT, 2), requests(INTERMITTENT, 2))
        ]
        assert all(x == y for x, y in answers), f"{name}: the same requests and seeds gave {answers}"


def check_state_dict_round_trips(kind, example: str | None = None) -> None:
    """A policy that loads another's state answers the next request as that one does."""
    for kind_, name, spec in _examples(kind, example):
        original = kind_.build(spec, CLIENTS, 4)
        asked = list(requests(None, 4))
        for request in asked[:5]:
            original.select(request)
        restored = kind_.build(spec, CLIENTS, 4)
        restored.load_state_dict(original.state_dict())
        last, again = asked[5], list(requests(None, 4))[5]
        assert restored.select(again) == original.select(last), f"{name}: differs after load_state_dict"


@functools.cache
def _runs_folder() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="asyncfl-selection-checks-")


def short_run(kind: SelectionKind, raw: dict, mode: str) -> Path:
    """A short run of the example under ``mode`` (timing only unless the kind needs losses)."""
    server = {"mode": "sync", "deadline_s": 6.0, "clients_per_round": 6} if mode == "sync" else {"mode": "k_async"}
    if mode == "k_async":
        server |= {"k": 3, "concurrency": 6}
    sections = {"server": {**server, "selection": raw}, "stop": {"rounds": 8}}
    sections["population"] = {"availability": INTERMITTENT}
    spec = merged(sections)
    if kind.needs_losses:  # a small full run: losses to rank by
        spec |= {"timing_only": False, "model": {"name": "logreg"}, "data": {"dataset": "digits", "clients": 24}}
    out = Path(_runs_folder().name) / f"{kind.name}-{mode}-{len(list(Path(_runs_folder().name).iterdir()))}"
    return run_scenario(validate_scenario(spec, source="<check>"), out, quiet=True)


def check_a_short_run_works(kind, example: str | None = None) -> None:
    """Only for kinds of the schema (a run validates its scenario against it)."""
    kind = kind_of(kind)
    if KINDS.get(kind.name) is not kind:
        return
    for name, raw in kind.examples:
        if example is not None and name != example:
            continue
        for mode in sorted(kind.modes):
            rounds = table(short_run(kind, raw, mode) / "rounds.csv")
            assert len(rounds) == 8, f"{name} ({mode}): {len(rounds)} rounds of 8"
            if mode == "sync":
                assert all(int(r["selected"]) <= 6 for r in rounds), f"{name}: more than clients_per_round asked"


KIND_CHECKS: tuple[Callable, ...] = (check_examples_are_declared,)
EXAMPLE_CHECKS: tuple[Callable, ...] = (
    check_selects_sorted_unique_candidates_of_the_right_size,
    check_same_seed_same_selection,
    check_state_dict_round_trips,
    check_a_short_run_works,
)


def checks_of(kind) -> Iterator[tuple[str | None, Callable]]:
    """(example name or None for the whole kind, check): every check that applies to the kind."""
    kind = kind_of(kind)
    for check in KIND_CHECKS:
        yield None, check
    for name, _ in kind.examples:
        for check in EXAMPLE_CHECKS:
            yield name, check


def check_selection_kind(kind) -> None:
    """Run every selection check on one kind (its name or registration) over all its examples."""
    for example, check in checks_of(kind):
        check(kind, example)
