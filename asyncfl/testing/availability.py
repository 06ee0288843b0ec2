"""The availability-kind contract as plain checks, run on a kind's own examples (``KIND.examples``).

Each example is built the way a run builds it (validated spec -> the kind's ``build`` over a
:class:`~asyncfl.sim.availability.base.Draw`) and held to:

* consistency: ``next_online(t) == t`` exactly when online; a continuous-time model stays online on
  [t, next_offline(t)) and is online again at a finite ``next_online``;
* order independence: the answers do not depend on the order in which the questions are asked;
* determinism by seed, and a different seed giving a different pattern (kinds that say ``seeded``);
* the long-run fraction of time (or rounds) online equals the p_i the kind reports
  (``probabilities``), with a tiny p and with p = 1 (always online, never drops);
* every model is an :class:`~asyncfl.sim.availability.base.AvailabilityModel`, and the capabilities it
  declares (overridden or default) agree with its three answers: ``why_not``, ``next_cut``,
  ``earliest_online``, ``next_online_within``, ``offline_seconds`` and ``online_in_rounds``.

An example whose ``file`` is ``"TRACE"`` reads the checks' own trace: every client online half the time.
Every check takes the kind (its registered name or its :class:`AvailabilityKind`) and optionally the
name of one example (default: all of them).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from asyncfl.config import validate_scenario
from asyncfl.sim.availability import KINDS, AvailabilityKind, AvailabilityModel, Draw
from asyncfl.sim.availability.base import walk_offline
from asyncfl.testing.suite import CheckOutcome, example_cases, expected_failures, names, run_checks

CLIENTS = 40
HORIZON_S, ROUNDS = 20_000.0, 2_000
DAYS_S = 4 * 86_400.0  # kinds reading the local time of day: p_i is the mean over whole days
TRACE = "TRACE"


def kind_of(kind: str | AvailabilityKind) -> AvailabilityKind:
    if isinstance(kind, AvailabilityKind):
        return kind
    if kind not in KINDS:
        raise ValueError(f"no availability kind named {kind!r}; registered: {', '.join(KINDS)}")
    return KINDS[kind]


def example_names(kind: str | AvailabilityKind) -> list[str]:
    return [name for name, _ in kind_of(kind).examples]


def _write_trace(folder: Path) -> Path:
    """Every client online on [10 i + c % 3, 10 i + c % 3 + 5) for i = 0 .. 1999: half of the time, p NaN."""
    path = folder / "online.csv"
    rows = [f"{c},{10.0 * i + c % 3},{10.0 * i + c % 3 + 5.0}" for c in range(CLIENTS) for i in range(2_000)]
    path.write_text("client,start_s,end_s\n" + "\n".join(rows) + "\n")
    return path


def validated(kind: AvailabilityKind, raw: dict, **changes):
    """The validated section of ``raw``: within a scenario (as a run validates it) for a kind of the
    schema, by its own section and file checks for a kind from outside it."""
    raw = {**raw, **changes}
    if KINDS.get(kind.name) is kind:
        scenario = validate_scenario({"data": {"clients": CLIENTS}, "population": {"availability": raw}})
        return scenario.population.availability
    spec = kind.section.model_validate(raw)
    if kind.check_files is not None:
        kind.check_files(spec, CLIENTS)
    return spec


def _examples(kind: str | AvailabilityKind, example: str | None) -> Iterator[tuple[AvailabilityKind, str, dict]]:
    """(kind, example name, raw spec with the trace file filled in), in a folder that lives until the
    check is done."""
    kind = kind_of(kind)
    chosen = [(n, raw) for n, raw in kind.examples if example is None or n == example]
    assert chosen, (
        f"availability kind {kind.name!r} has no example {example!r}"
        if example
        else (f"availability kind {kind.name!r} registers no examples (AvailabilityKind.examples)")
    )
    with tempfile.TemporaryDirectory() as folder:
        trace = None
        for name, raw in chosen:
            if raw.get("file") == TRACE:
                trace = trace or _write_trace(Path(folder))
                raw = {**raw, "file": str(trace)}
            yield kind, name, raw


def clock(kind: AvailabilityKind, spec) -> str:
    """rounds when the spec decides once per sync round, else time."""
    return "rounds" if kind.counts_rounds(spec) is not None else "time"


def models(kind: AvailabilityKind, spec, seed: int) -> list:
    build = kind.build(spec, Draw(CLIENTS, seed))
    return [build(i) for i in range(CLIENTS)]


def questions(clock_: str, rng: np.random.Generator) -> list[tuple[float, int]]:
    """(t, round) pairs; for round-indexed kinds every round at its own time."""
    if clock_ == "rounds":
        return [(float(r) * 3.0 + 0.5, int(r)) for r in rng.integers(0, 200, size=60)]
    return [(float(t), int(t // 3.0)) for t in rng.uniform(0, 2_000, size=60)]


def answers(model, asked) -> list[tuple]:
    return [(model.online(t, r), model.next_offline(t, r), model.next_online(t)) for t, r in asked]


def check_examples_are_declared(kind, example: str | None = None) -> None:
    """The kind registers examples, of its own kind, under distinct names."""
    kind = kind_of(kind)
    assert kind.examples, f"availability kind {kind.name!r} registers no examples (AvailabilityKind.examples)"
    for name, raw in kind.examples:
        assert raw.get("kind") == kind.name, f"{kind.name}: example {name!r} is of kind {raw.get('kind')!r}"
    names = example_names(kind)
    assert len(set(names)) == len(names), f"{kind.name}: two examples share a name: {names}"


def check_models_say_whether_they_count_rounds(kind, example: str | None = None) -> None:
    """The model's ``round_indexed`` (read by the results) agrees with its kind's ``counts_rounds``
    (read by validation)."""
    for kind_, name, raw in _examples(kind, example):
        spec = validated(kind_, raw)
        for model in models(kind_, spec, seed=0)[:3]:
            assert model.round_indexed == (clock(kind_, spec) == "rounds"), (
                f"{name}: round_indexed is {model.round_indexed} but counts_rounds says {kind_.counts_rounds(spec)!r}"
            )


def check_models_are_availability_models(kind, example: str | None = None) -> None:
    """Every model the kind builds is an AvailabilityModel: the simulation calls its capabilities directly."""
    for kind_, name, raw in _examples(kind, example):
        for model in models(kind_, validated(kind_, raw), seed=0)[:3]:
            assert isinstance(model, AvailabilityModel), (
                f"{name}: the model is a {type(model).__name__}, not an asyncfl.sim.availability.AvailabilityModel"
            )


def check_capabilities_agree_with_the_answers(kind, example: str | None = None) -> None:
    """why_not is None exactly when online; next_cut is (next_offline, a reason); earliest_online is a lower
    bound of next_online; next_online_within is next_online up to ``until``; a continuous-time model's
    offline_seconds is its offline periods summed; a round-indexed model's online_in_rounds its online()."""
    for kind_, name, raw in _examples(kind, example):
        spec = validated(kind_, raw)
        clock_ = clock(kind_, spec)
        for model in models(kind_, spec, seed=5)[:6]:
            for t, r in questions(clock_, np.random.default_rng(6)):
                online, back = model.online(t, r), model.next_online(t)
                assert (model.why_not(t, r) is None) == online, f"{name}: why_not({t}) disagrees with online"
                cut, reason = model.next_cut(t, r)
                assert cut == model.next_offline(t, r) and reason, f"{name}: next_cut({t}) is not next_offline"
                assert model.earliest_online(t) <= back, f"{name}: earliest_online({t}) after next_online {back}"
                until = t + 100.0
                within = model.next_online_within(t, until)
                assert within == back if back <= until else within > until, f"{name}: next_online_within({t})"
            if clock_ == "rounds":
                rounds = np.arange(50, dtype=np.int64)
                starts = 3.0 * rounds + 0.5
                states = np.asarray(model.online_in_rounds(rounds, starts)).astype(bool).tolist()
                assert states == [model.online(float(s), int(r)) for s, r in zip(starts, rounds)], name
            else:
                walked = sum(b - a for a, b in walk_offline(model, 2_000.0))
                measured = model.offline_seconds(2_000.0)
                assert math.isclose(measured, walked, rel_tol=1e-9, abs_tol=1e-6), (
                    f"{name}: offline_seconds(2000) = {measured}, but its offline periods add up to {walked}"
                )


def check_answers_are_consistent(kind, example: str | None = None) -> None:
    """next_online(t) == t exactly when online; online until next_offline, online at next_online."""
    for kind_, name, raw in _examples(kind, example):
        spec = validated(kind_, raw)
        clock_ = clock(kind_, spec)
        for model in models(kind_, spec, seed=3)[:10]:
            for t, r in questions(clock_, np.random.default_rng(1)):
                online, drop, back = model.online(t, r), model.next_offline(t, r), model.next_online(t)
                assert (back == t) == online or clock_ == "rounds", (name, t, online, back)
                assert drop >= t and back >= t, f"{name}: next_offline {drop} or next_online {back} before t = {t}"
                if clock_ == "rounds":
                    assert back == t, f"{name}: a round-indexed model answers next_online(t) = t, got {back} at {t}"
                    continue
                if online:
                    assert drop > t, f"{name}: online at {t} but drops at once"
                    for s in np.linspace(t, min(drop, t + 500.0), 7, endpoint=False):
                        assert model.online(float(s), r), f"{name}: offline at {s}, before next_offline {drop}"
                else:
                    assert drop == t, f"{name}: offline at {t} but next_offline is {drop}"
                    if math.isfinite(back):
                        assert model.online(back, r), f"{name}: not online at next_online {back}"


def check_answers_do_not_depend_on_the_asking_order(kind, example: str | None = None) -> None:
    for kind_, name, raw in _examples(kind, example):
        spec = validated(kind_, raw)
        asked = questions(clock(kind_, spec), np.random.default_rng(2))
        order = np.random.default_rng(3).permutation(len(asked))
        forward = [answers(m, asked) for m in models(kind_, spec, seed=4)[:8]]
        shuffled = []
        for model in models(kind_, spec, seed=4)[:8]:
            by_index = dict(zip(order.tolist(), answers(model, [asked[i] for i in order])))
            shuffled.append([by_index[i] for i in range(len(asked))])
        assert forward == shuffled, f"{name}: the answers depend on the order of the questions"


def check_determinism_by_seed(kind, example: str | None = None) -> None:
    """The same seed gives the same pattern; another seed another one exactly when the kind is ``seeded``."""
    for kind_, name, raw in _examples(kind, example):
        spec = validated(kind_, raw)
        asked = questions(clock(kind_, spec), np.random.default_rng(5))
        first = [answers(m, asked) for m in models(kind_, spec, seed=6)]
        assert first == [answers(m, asked) for m in models(kind_, spec, seed=6)], f"{name}: not deterministic"
        other = [answers(m, asked) for m in models(kind_, spec, seed=7)]
        assert (first != other) == kind_.seeded, f"{name}: seeded is {kind_.seeded} but another seed " + (
            "changes the pattern" if first != other else "gives the same pattern"
        )


def _fraction_online(model, clock_: str, horizon: float) -> float:
    if clock_ == "rounds":
        return sum(model.online(r * 3.0, r) for r in range(ROUNDS)) / ROUNDS
    on, t = 0.0, 0.0
    while t < horizon:
        if model.online(t, 0):
            end = min(model.next_offline(t, 0), horizon)
            on, t, before = on + end - t, end, t
        else:
            t, before = model.next_online(t), t
        assert t > before, f"no progress at t = {before}"  # a zero-length stretch would loop forever
    return on / horizon


def _check_fractions(kind: AvailabilityKind, name: str, spec, seed: int, tolerance: float) -> np.ndarray:
    p = np.array(kind.probabilities(spec, Draw(CLIENTS, seed)))
    horizon = DAYS_S if kind.local_time else HORIZON_S
    fractions = np.array([_fraction_online(m, clock(kind, spec), horizon) for m in models(kind, spec, seed)])
    if np.isnan(p).all():  # traces: no p_i, the file says it all
        return fractions
    assert abs(fractions.mean() - p.mean()) <= tolerance / 2, (
        f"{name}: mean fraction of time online {fractions.mean():.4f}, mean p {p.mean():.4f}"
    )
    assert np.abs(fractions - p).max() <= tolerance, f"{name}: a client online {np.abs(fractions - p).max():.4f} off p"
    return fractions


def check_long_run_fraction_online_is_p(kind, example: str | None = None) -> None:
    for kind_, name, raw in _examples(kind, example):
        fractions = _check_fractions(kind_, name, validated(kind_, raw), seed=8, tolerance=0.1)
        if dict(kind_.examples)[name].get("file") == TRACE:  # the checks' own trace: online half of the time
            assert np.allclose(fractions, 0.5), f"{name}: the trace is online half the time, got {fractions}"


def takes_p(raw: dict) -> bool:
    """Examples that set ``p`` are also checked with a tiny p and with p = 1."""
    return "p" in raw


def _p_examples(kind, example: str | None) -> Iterator[tuple[AvailabilityKind, str, dict]]:
    for kind_, name, raw in _examples(kind, example):
        if takes_p(raw):
            yield kind_, name, raw


def check_tiny_p_is_rarely_online_but_comes_back(kind, example: str | None = None) -> None:
    for kind_, name, raw in _p_examples(kind, example):
        spec = validated(kind_, raw, p=0.02)
        _check_fractions(kind_, name, spec, seed=9, tolerance=0.05)
        if clock(kind_, spec) == "time":  # the dispatcher waits for the next online time: it must come soon enough
            for model in models(kind_, spec, seed=9):
                assert model.next_online(0.0) < DAYS_S, f"{name}: with p = 0.02 a client is not back within 4 days"


def check_p_one_is_always_online(kind, example: str | None = None) -> None:
    for kind_, name, raw in _p_examples(kind, example):
        for model in models(kind_, validated(kind_, raw, p=1.0), seed=10):
            for t in np.linspace(0, 5_000, 101):
                r = int(t // 3.0)
                assert model.online(float(t), r) and model.next_offline(float(t), r) == math.inf, (
                    f"{name}: with p = 1 a client is offline or drops at t = {t}"
                )
                assert model.next_online(float(t)) == t, f"{name}: with p = 1 next_online({t}) is not t"


KIND_CHECKS: tuple[Callable, ...] = (check_examples_are_declared,)  # once per kind
EXAMPLE_CHECKS: tuple[Callable, ...] = (
    check_models_are_availability_models,
    check_models_say_whether_they_count_rounds,
    check_answers_are_consistent,
    check_answers_do_not_depend_on_the_asking_order,
    check_determinism_by_seed,
    check_long_run_fraction_online_is_p,
    check_capabilities_agree_with_the_answers,
)
P_CHECKS: tuple[Callable, ...] = (check_tiny_p_is_rarely_online_but_comes_back, check_p_one_is_always_online)
ALL_CHECKS = KIND_CHECKS + EXAMPLE_CHECKS + P_CHECKS


def checks_of(kind) -> Iterator[tuple[str | None, Callable]]:
    """(example name or None for the whole kind, check): every check that applies to the kind."""
    kind = kind_of(kind)
    for check in KIND_CHECKS:
        yield None, check
    for name, raw in kind.examples:
        for check in EXAMPLE_CHECKS + (P_CHECKS if takes_p(raw) else ()):
            yield name, check


def check_availability_kind(kind, *, expected_failed_checks: dict[str, str] | None = None) -> list[CheckOutcome]:
    """Run every availability check on one kind (its name or registration) over all its examples;
    raises AssertionError on the first broken contract, except for the checks in ``expected_failed_checks``
    ({check name: why}: reported as ``xfail``, see :mod:`asyncfl.testing.suite`)."""
    registration = kind_of(kind)
    what = f"an availability kind ({registration.name})"
    expected = expected_failures(expected_failed_checks, names(ALL_CHECKS), what)
    return run_checks(example_cases(registration, checks_of(registration)), expected)
