"""The selection-policy contract as plain checks, run on a kind's own examples (``KIND.examples``).

Each example's section is validated the way a run validates it (inside a scenario for a kind of the
schema, by its own section otherwise), built with the kind's ``build`` and held to:

* ``select`` returns sorted, unique client ids, all among the request's candidates, never more than
  ``min(count, len(candidates))`` (all candidates for a null count);
* a kind tagged ``fills_count`` (:class:`~asyncfl.sim.selection.SelectionTags`) chooses exactly that many
  when every client can take work;
* the same request with the same rng seed gives the same answer (two policies built alike);
* a short run under every mode its tags list works with it (a full run for a kind tagged
  ``needs_losses``): every sync round asks at most ``clients_per_round`` clients, and the run reaches
  ``stop.rounds``.

A policy keeps no ``state_dict``: resume replays it (:class:`~asyncfl.sim.selection.SelectionPolicy`).

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
from asyncfl.testing.suite import CheckOutcome, applies, example_cases, expected_failures, names, requires, run_checks

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
    fb.last_version[:] = rng.integers(0, 5, CLIENTS)
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
    modes = kind.tags.modes
    assert modes <= {"sync", "k_async"} and modes, f"{kind.name}: tag modes {sorted(modes)}"


def _asked(request: SelectionRequest) -> int:
    return len(request.candidates) if request.count is None else min(request.count, len(request.candidates))


def check_selects_sorted_unique_candidates_at_most_asked(kind, example: str | None = None) -> None:
    for kind_, name, spec in _examples(kind, example):
        for availability in (None, INTERMITTENT):
            policy = kind_.build(spec, CLIENTS, 0)
            for request in requests(availability, seed=1):
                chosen = policy.select(request)
                assert all(isinstance(i, int) for i in chosen), f"{name}: ids must be ints, got {chosen!r}"
                assert chosen == sorted(set(chosen)), f"{name}: not sorted and unique: {chosen}"
                assert set(chosen) <= set(request.candidates.tolist()), f"{name}: chose a non-candidate: {chosen}"
                size = _asked(request)
                assert len(chosen) <= size, f"{name}: {len(chosen)} chosen, at most {size} allowed"


@requires("fills_count")
def check_fills_the_count(kind, example: str | None = None) -> None:
    """Every client can take work: exactly min(count, candidates) chosen."""
    for kind_, name, spec in _examples(kind, example):
        policy = kind_.build(spec, CLIENTS, 0)
        for request in requests(None, seed=1):
            chosen = policy.select(request)
            assert len(chosen) == _asked(request), (
                f"{name}: asked {request.count} of {len(request.candidates)}: {chosen}"
            )


def check_same_seed_same_selection(kind, example: str | None = None) -> None:
    for kind_, name, spec in _examples(kind, example):
        first, second = kind_.build(spec, CLIENTS, 3), kind_.build(spec, CLIENTS, 3)
        answers = [
            (first.select(a), second.select(b)) for a, b in zip(requests(INTERMITTENT, 2), requests(INTERMITTENT, 2))
        ]
        assert all(x == y for x, y in answers), f"{name}: the same requests and seeds gave {answers}"


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
    if kind.tags.needs_losses:  # a small full run: losses to rank by
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
        for mode in sorted(kind.tags.modes):
            rounds = table(short_run(kind, raw, mode) / "rounds.csv")
            assert len(rounds) == 8, f"{name} ({mode}): {len(rounds)} rounds of 8"
            if mode == "sync":
                assert all(int(r["selected"]) <= 6 for r in rounds), f"{name}: more than clients_per_round asked"


KIND_CHECKS: tuple[Callable, ...] = (check_examples_are_declared,)
EXAMPLE_CHECKS: tuple[Callable, ...] = (
    check_selects_sorted_unique_candidates_at_most_asked,
    check_fills_the_count,
    check_same_seed_same_selection,
    check_a_short_run_works,
)
ALL_CHECKS = KIND_CHECKS + EXAMPLE_CHECKS


def checks_of(kind) -> Iterator[tuple[str | None, Callable]]:
    """(example name or None for the whole kind, check): every check that applies to the kind's tags."""
    kind = kind_of(kind)
    for check in KIND_CHECKS:
        yield None, check
    for name, _ in kind.examples:
        for check in EXAMPLE_CHECKS:
            if applies(check, kind.tags):
                yield name, check


def check_selection_kind(kind, *, expected_failed_checks: dict[str, str] | None = None) -> list[CheckOutcome]:
    """Run every selection check that applies to one kind (its name or registration) over all its examples;
    raises AssertionError on the first broken contract, except for the checks in ``expected_failed_checks``
    ({check name: why}: reported as ``xfail``, see :mod:`asyncfl.testing.suite`)."""
    registration = kind_of(kind)
    expected = expected_failures(expected_failed_checks, names(ALL_CHECKS), f"a selection kind ({registration.name})")
    return run_checks(example_cases(registration, checks_of(registration)), expected)
