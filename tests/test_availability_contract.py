"""One contract suite over every availability kind of the schema (scikit-learn's parametrize_with_checks
idea, as tests/test_strategy_contract.py does for strategies).  Each kind is built the way a run builds
it (validated spec -> asyncfl.sim.population.availability_builder) and held to:

* consistency: ``next_online(t) == t`` exactly when online; a continuous-time model stays online on
  [t, next_offline(t)) and is online again at a finite ``next_online``;
* order independence: the answers do not depend on the order in which the questions are asked;
* determinism by seed, and a different seed giving a different pattern (random kinds);
* the long-run fraction of time (or rounds) online equals the p_i the run reports
  (``participation_probabilities``), with a tiny p and with p = 1 (always online, never drops).

The cases are the kinds' own examples (``KIND.examples`` in each module of asyncfl/sim/availability/):
a kind registered without examples fails ``test_every_kind_has_examples``.
"""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest

from asyncfl.config import validate_scenario
from asyncfl.config.loading import _tag_of
from asyncfl.config.population import Availability
from asyncfl.sim.availability import KINDS
from asyncfl.sim.population import availability_builder, participation_probabilities

CLIENTS = 40


def _clock(spec: dict) -> str:
    """The clock of a spec: rounds when its kind decides once per sync round, else time."""
    validated = validate_scenario({"data": {"clients": CLIENTS}, "population": {"availability": _with_file(spec)}})
    a = validated.population.availability
    return "rounds" if KINDS[a.kind].counts_rounds(a) is not None else "time"


def _with_file(spec: dict, trace: str = "unused.csv") -> dict:
    return {**spec, "file": trace} if spec.get("file") == "TRACE" else spec


# every registered kind's examples (its KIND.examples): (name, spec, clock)
EXAMPLES: dict[str, list[tuple[str, dict, str]]] = {
    name: [(case, spec, _clock(spec)) for case, spec in kind.examples] for name, kind in KINDS.items()
}
CASES = [case for cases in EXAMPLES.values() for case in cases]
IDS = [name for name, _, _ in CASES]
HORIZON_S, ROUNDS = 20_000.0, 2_000
DAYS_S = 4 * 86_400.0  # diurnal kinds: p_i is the mean over whole days


def _kinds_in_schema() -> set[str]:
    union = typing.get_args(Availability)[0]
    return {_tag_of(member) for member in typing.get_args(union)}


def test_every_kind_has_examples():
    assert set(KINDS) == _kinds_in_schema()
    for name, cases in EXAMPLES.items():
        assert cases, f"availability kind {name!r} registers no examples (AvailabilityKind.examples)"
        assert all(spec["kind"] == name for _, spec, _ in cases)
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("name, spec, clock", CASES, ids=IDS)
def test_models_say_whether_they_count_rounds(name, spec, clock, trace_file):
    """The model's ``round_indexed`` (read by the results) agrees with its kind's ``counts_rounds``
    (read by validation)."""
    for model in _models(_spec(spec, trace_file), seed=0)[:3]:
        assert model.round_indexed == (clock == "rounds")


@pytest.fixture
def trace_file(tmp_path):
    """Every client online on [10 i, 10 i + 5) for i = 0 .. 1999: half of the time, p NaN."""
    path = tmp_path / "online.csv"
    rows = [f"{c},{10.0 * i + c % 3},{10.0 * i + c % 3 + 5.0}" for c in range(CLIENTS) for i in range(2_000)]
    path.write_text("client,start_s,end_s\n" + "\n".join(rows) + "\n")
    return path


def _spec(spec: dict, trace_file, **changes):
    spec = {**spec, **changes}
    if spec.get("file") == "TRACE":
        spec["file"] = str(trace_file)
    scenario = validate_scenario({"data": {"clients": CLIENTS}, "population": {"availability": spec}})
    return scenario.population.availability


def _models(spec, seed: int) -> list:
    build = availability_builder(spec, CLIENTS, seed)
    return [build(i) for i in range(CLIENTS)]


def _questions(clock: str, rng: np.random.Generator) -> list[tuple[float, int]]:
    """(t, round) pairs; for round-indexed kinds every round at its own time."""
    if clock == "rounds":
        rounds = rng.integers(0, 200, size=60)
        return [(float(r) * 3.0 + 0.5, int(r)) for r in rounds]
    return [(float(t), int(t // 3.0)) for t in rng.uniform(0, 2_000, size=60)]


def _answers(model, questions) -> list[tuple]:
    return [(model.online(t, r), model.next_offline(t, r), model.next_online(t)) for t, r in questions]


@pytest.mark.parametrize("name, spec, clock", CASES, ids=IDS)
def test_answers_are_consistent(name, spec, clock, trace_file):
    questions = _questions(clock, np.random.default_rng(1))
    for model in _models(_spec(spec, trace_file), seed=3)[:10]:
        for t, r in questions:
            online, drop, back = model.online(t, r), model.next_offline(t, r), model.next_online(t)
            assert (back == t) == online or clock == "rounds", (t, online, back)
            assert drop >= t and back >= t
            if clock == "rounds":
                assert back == t  # no notion of time between rounds (the dispatcher's contract)
                continue
            if online:
                assert drop > t
                for s in np.linspace(t, min(drop, t + 500.0), 7, endpoint=False):
                    assert model.online(float(s), r)
            else:
                assert drop == t
                if math.isfinite(back):
                    assert model.online(back, r)


@pytest.mark.parametrize("name, spec, clock", CASES, ids=IDS)
def test_answers_do_not_depend_on_the_asking_order(name, spec, clock, trace_file):
    questions = _questions(clock, np.random.default_rng(2))
    order = np.random.default_rng(3).permutation(len(questions))
    spec = _spec(spec, trace_file)
    forward = [_answers(m, questions) for m in _models(spec, seed=4)[:8]]
    shuffled = []
    for model in _models(spec, seed=4)[:8]:
        answers = dict(zip(order.tolist(), _answers(model, [questions[i] for i in order])))
        shuffled.append([answers[i] for i in range(len(questions))])
    assert forward == shuffled


@pytest.mark.parametrize("name, spec, clock", CASES, ids=IDS)
def test_determinism_by_seed(name, spec, clock, trace_file):
    questions = _questions(clock, np.random.default_rng(5))
    spec = _spec(spec, trace_file)
    first = [_answers(m, questions) for m in _models(spec, seed=6)]
    assert first == [_answers(m, questions) for m in _models(spec, seed=6)]
    other = [_answers(m, questions) for m in _models(spec, seed=7)]
    assert (first != other) == KINDS[spec.kind].seeded


def _fraction_online(model, clock: str, horizon: float) -> float:
    if clock == "rounds":
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


def _check_fractions(spec, clock: str, seed: int, tolerance: float) -> np.ndarray:
    p = np.array(participation_probabilities(spec, CLIENTS, seed))
    horizon = DAYS_S if spec.kind == "diurnal" else HORIZON_S
    fractions = np.array([_fraction_online(m, clock, horizon) for m in _models(spec, seed)])
    if np.isnan(p).all():  # traces: no p_i, the file says it all
        return fractions
    assert abs(fractions.mean() - p.mean()) <= tolerance / 2, (fractions.mean(), p.mean())
    assert np.abs(fractions - p).max() <= tolerance, np.abs(fractions - p).max()
    return fractions


@pytest.mark.parametrize("name, spec, clock", CASES, ids=IDS)
def test_long_run_fraction_online_is_p(name, spec, clock, trace_file):
    fractions = _check_fractions(_spec(spec, trace_file), clock, seed=8, tolerance=0.1)
    if name == "trace":
        assert np.allclose(fractions, 0.5)


P_KEYED = [(n, s, c) for n, s, c in CASES if "p" in s]


@pytest.mark.parametrize("name, spec, clock", P_KEYED, ids=[n for n, _, _ in P_KEYED])
def test_tiny_p_is_rarely_online_but_comes_back(name, spec, clock, trace_file):
    spec = _spec(spec, trace_file, p=0.02)
    _check_fractions(spec, clock, seed=9, tolerance=0.05)
    if clock == "time":  # the dispatcher waits for the next online time: it must exist and be soon enough
        for model in _models(spec, seed=9):
            assert model.next_online(0.0) < DAYS_S


@pytest.mark.parametrize("name, spec, clock", P_KEYED, ids=[n for n, _, _ in P_KEYED])
def test_p_one_is_always_online(name, spec, clock, trace_file):
    for model in _models(_spec(spec, trace_file, p=1.0), seed=10):
        for t in np.linspace(0, 5_000, 101):
            r = int(t // 3.0)
            assert model.online(float(t), r) and model.next_offline(float(t), r) == math.inf
            assert model.next_online(float(t)) == t
