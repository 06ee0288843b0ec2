"""The strategy contract as plain checks (scikit-learn's ``check_estimator`` idea).

Every strategy, whatever its paper: aggregation never mutates its inputs, weights are finite and
non-negative, the result does not depend on the order in which the updates of one aggregation arrived,
``state_dict`` holds only tensors and plain values and a fresh strategy loaded from it continues bitwise
(and copies it, for a strategy that keeps a memory), and the tags its section declares
(``AlgorithmParams.tags``, an :class:`~asyncfl.algorithms.base.AlgorithmTags`) are true.  A check that needs a
tag says so (:func:`~asyncfl.testing.suite.requires`) and runs only on the algorithms that have it.

The strategy under test (an :class:`~asyncfl.testing.algorithm.Algorithm`, a registered name or a
section) is built and fed as :mod:`asyncfl.testing.algorithm` says.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable
from typing import Any

import torch

from asyncfl.algorithms import Update
from asyncfl.algorithms.base import AlgorithmTags
from asyncfl.config import ConfigError, validate_scenario
from asyncfl.testing.algorithm import (
    DIM,
    NUM_CLIENTS,
    Algorithm,
    algorithm,
    build,
    context,
    memory_schedule,
    schedules,
    updates,
)
from asyncfl.testing.suite import CheckOutcome, applies, expected_failures, names, requires, run_checks


def aggregate_schedule(registration, schedule, reverse: bool = False) -> list[torch.Tensor]:
    """Play ``schedule`` (per aggregation: (client, delta, staleness) items) through a fresh strategy,
    each aggregation's updates in reverse order if asked, checking every aggregation's inputs and
    outputs; returns the global vector after each aggregation."""
    alg = algorithm(registration)
    strategy, name = build(alg), alg.name
    w = torch.linspace(-1, 1, DIM)
    records = []
    for r, items in enumerate(schedule):
        delivered = updates(alg, r, items)
        if reverse:
            delivered = delivered[::-1]
        before_w, before = w.clone(), [u.delta.clone() for u in delivered]
        result = strategy.aggregate(w, delivered, context(r, delivered))
        assert torch.equal(w, before_w), f"{name} mutated the global vector"
        assert all(torch.equal(u.delta, b) for u, b in zip(delivered, before)), f"{name} mutated a delta"
        assert torch.isfinite(result.params).all(), f"{name} returned non-finite parameters"
        for client, weight in result.weights.items():
            assert 0 <= client < NUM_CLIENTS, f"{name} weighted client {client}, not one of the {NUM_CLIENTS}"
            assert weight == weight and abs(weight) != float("inf") and weight >= 0, (
                f"{name} gave client {client} the weight {weight}: weights are finite and non-negative"
            )
        records.append(result.params)
        w = result.params
    return records


def check_tags(registration) -> None:
    """Its tags are an AlgorithmTags; server_k is set only for a k_async algorithm."""
    alg = algorithm(registration)
    tags = alg.params.tags
    assert isinstance(tags, AlgorithmTags), (
        f"{alg.name}: tags must be an asyncfl.algorithms.base.AlgorithmTags, got {type(tags).__name__} {tags!r}"
    )
    k = tags.server_k
    assert k is None or (isinstance(k, int) and k >= 1 and "k_async" in alg.params.modes), (
        f"{alg.name}: tag server_k must be a positive int of a k_async algorithm, got {k!r}"
    )


@requires("server_k")
def check_server_k_is_enforced(registration) -> None:
    """(Registered) the schema refuses a server.k other than the one its server_k tag requires."""
    alg = algorithm(registration)
    k = alg.tags.server_k
    if alg.registered:
        try:
            validate_scenario({"server": {"mode": "k_async", "k": k + 1}, "algorithm": {"name": alg.name}})
        except ConfigError:
            return
        raise AssertionError(f"{alg.name}: tag server_k is {k} but the schema accepts server.k {k + 1}")


def check_aggregation_leaves_its_inputs_alone(registration) -> None:
    """No aggregation mutates the global vector or a delta; parameters and weights are finite, the
    weights non-negative and keyed by clients of the population."""
    for schedule in schedules():
        aggregate_schedule(registration, schedule)


def check_aggregation_does_not_depend_on_the_arrival_order(registration) -> None:
    """The updates of one aggregation give the same result whichever arrived first."""
    alg = algorithm(registration)
    for schedule in schedules():
        forward = aggregate_schedule(alg, schedule)
        backward = aggregate_schedule(alg, schedule, reverse=True)
        for a, b in zip(forward, backward):
            assert torch.allclose(a, b, atol=1e-5), f"{alg.name} depends on the arrival order of simultaneous updates"


PLAIN = (int, float, str, bool, type(None), torch.Tensor)


def _plain(value) -> bool:
    """Only tensors and plain values (numbers, strings), in lists, tuples and str/int-keyed dicts."""
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, PLAIN)


def _reloaded(alg: Algorithm, state: dict):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    fresh = build(alg)
    fresh.load_state_dict(torch.load(buffer, weights_only=True))
    return fresh


def check_state_dict_round_trip_continues_bitwise(registration) -> None:
    """state_dict -> torch.save/load -> a fresh strategy's load_state_dict: from then on it aggregates
    exactly like the original (what --resume relies on); the state holds no strategy objects, and it
    is empty exactly when the strategy keeps no memory (its ``keeps_memory`` tag)."""
    alg = algorithm(registration)
    name, original = alg.name, build(alg)
    w = torch.linspace(-1, 1, DIM)
    memory_mattered = False
    for cut, delivered in enumerate(memory_schedule(alg, rounds=12, seed=7)):
        state = original.state_dict()
        assert _plain(state), f"{name}.state_dict() holds more than tensors and plain values: {state!r}"
        fresh = _reloaded(alg, state)
        expected = original.aggregate(w, delivered, context(cut, delivered))
        got = fresh.aggregate(w, delivered, context(cut, delivered))
        assert torch.equal(expected.params, got.params), f"{name} diverged after a reload at aggregation {cut}"
        amnesiac = build(alg)  # the same step without the memory: differs for a strategy with one
        try:
            forgot = amnesiac.aggregate(w, delivered, context(cut, delivered)).params
        except ValueError:  # a strategy that cannot aggregate without its memory (FedAsync's model history)
            forgot = None
        memory_mattered |= forgot is None or not torch.equal(forgot, expected.params)
        assert expected.weights == got.weights, f"{name}: the weights differ after a reload at aggregation {cut}"
        assert repr(expected.notes) == repr(got.notes), f"{name}: the notes differ after a reload"  # NaN by text
        if hasattr(original, "extra_outputs"):
            assert repr(original.extra_outputs()) == repr(fresh.extra_outputs()), f"{name}: extra_outputs differ"
        w = expected.params
    remembers = bool(original.state_dict())
    assert memory_mattered == remembers, f"{name}: the schedule does not exercise its memory"
    assert remembers == alg.tags.keeps_memory, (
        f"{name}: tag keeps_memory is {alg.tags.keeps_memory} but its state_dict() is {'not ' * remembers}empty"
    )


def _touch(value) -> None:
    """Change every tensor of a state in place."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for v in value:
            _touch(v)
    elif isinstance(value, torch.Tensor):
        value.logical_not_() if value.dtype == torch.bool else value.add_(1)


def _equal(a, b) -> bool:
    """Equal states, NaN equal to NaN."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or a.dtype != b.dtype or a.shape != b.shape:
            return False
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())
    return a == b or (a != a and b != b)


@requires("keeps_memory")
def check_load_state_dict_copies(registration) -> None:
    """Loading copies: the fresh strategy's memory shares no storage with the original strategy whose
    state it loaded, while that one goes on aggregating and its memory changes."""
    alg = algorithm(registration)
    original, w = build(alg), torch.zeros(DIM)
    schedule = memory_schedule(alg, rounds=3, seed=1)
    for r, delivered in enumerate(schedule):
        w = original.aggregate(w, delivered, context(r, delivered)).params
    state = original.state_dict()
    fresh = build(alg)
    fresh.load_state_dict(state)
    before = copy.deepcopy(fresh.state_dict())
    original.aggregate(w, schedule[0], context(3, schedule[0]))
    _touch(original.state_dict())  # the original's memory itself, where its state_dict() shares it
    assert _equal(fresh.state_dict(), before), f"{alg.name}: a loaded strategy shares memory with the original"


def check_like_values_as_tagged(registration) -> None:
    """Whether the first aggregation depends on the values of make_strategy's ``like`` (not just its
    size, dtype and device) is what the ``uses_like_values`` tag says."""
    alg = algorithm(registration)
    update = Update(0, torch.full((DIM,), 0.5), 0, 0, 10, 3, 0.1, 1.0)
    results = []
    for like in (torch.zeros(DIM), torch.ones(DIM)):
        strategy = build(alg, like)
        results.append(strategy.aggregate(torch.linspace(-1, 1, DIM), [update], context(0, [update])).params)
    uses = not torch.equal(*results)
    assert uses == alg.tags.uses_like_values, (
        f"{alg.name}: tag uses_like_values is {alg.tags.uses_like_values} but the values of like "
        f"{'change' if uses else 'do not change'} its first aggregation"
    )


CHECKS: tuple[Callable[[Any], None], ...] = (
    check_tags,
    check_server_k_is_enforced,
    check_aggregation_leaves_its_inputs_alone,
    check_aggregation_does_not_depend_on_the_arrival_order,
    check_state_dict_round_trip_continues_bitwise,
    check_load_state_dict_copies,
    check_like_values_as_tagged,
)


def checks_of(registration) -> list[Callable[[Any], None]]:
    """The checks that apply to the algorithm's tags, in order."""
    tags = algorithm(registration).tags
    return [check for check in CHECKS if applies(check, tags)]


def check_strategy(
    registration, strategy: type | None = None, *, expected_failed_checks: dict[str, str] | None = None
) -> list[CheckOutcome]:
    """Run every strategy check that applies to one algorithm (a registered name, its section, or an
    :class:`Algorithm`); raises AssertionError on the first broken contract, except for the checks in
    ``expected_failed_checks`` ({check name: why}: reported as ``xfail``, see :mod:`asyncfl.testing.suite`)."""
    alg = algorithm(registration, strategy)
    expected = expected_failures(expected_failed_checks, names(CHECKS), f"a strategy ({alg.name})")
    return run_checks(((check.__name__, None, lambda check=check: check(alg)) for check in checks_of(alg)), expected)
