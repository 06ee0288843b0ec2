"""asyncfl.testing checks registrations made outside the package: a toy strategy and a toy availability
kind defined here pass their checks, and deliberately broken toys fail them with a clear message.
(The toys are not registered into the schema: the checks take the registration objects themselves.)"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import pytest
import torch
from pydantic import Field

from asyncfl.algorithms import Aggregate
from asyncfl.algorithms.base import AlgorithmParams, AlgorithmTags, Memoryless, weighted_sum
from asyncfl.sections import Section
from asyncfl.sim.availability import AvailabilityKind, AvailabilityModel
from asyncfl.testing import check_availability_kind, check_strategy
from asyncfl.testing.parametrize import parametrize_with_checks

# --- a strategy: the plain mean of the deltas ------------------------------------------------------------


class MeanParams(AlgorithmParams):
    name: Literal["toy_mean"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})


class Mean(Memoryless):
    def __init__(self, params, num_clients: int, like: torch.Tensor) -> None:
        self.params = params

    def aggregate(self, global_params, updates, context) -> Aggregate:
        weights = [1.0 / len(updates)] * len(updates)
        step = weighted_sum(updates, weights)
        return Aggregate(global_params + step, {u.client: w for u, w in zip(updates, weights)})


class ClippingMean(Mean):
    """Broken: clips the deltas in place."""

    def aggregate(self, global_params, updates, context) -> Aggregate:
        for u in updates:
            u.delta.clamp_(-1, 1)
        return super().aggregate(global_params, updates, context)


class FirstComeParams(MeanParams):
    name: Literal["toy_first_come"]


class FirstCome(Mean):
    """Broken: keeps only the update that arrived first."""

    def aggregate(self, global_params, updates, context) -> Aggregate:
        return super().aggregate(global_params, updates[:1], context)


class CountingParams(MeanParams):
    name: Literal["toy_counting"]  # keeps a memory but does not say so (no keeps_memory tag)


class Counting(Mean):
    def __init__(self, params, num_clients: int, like: torch.Tensor) -> None:
        super().__init__(params, num_clients, like)
        self.count = 0

    def aggregate(self, global_params, updates, context) -> Aggregate:
        self.count += 1
        out = super().aggregate(global_params, updates, context)
        return Aggregate(global_params + (out.params - global_params) / self.count, out.weights)

    def state_dict(self) -> dict:
        return {"count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.count = state["count"]


class MomentumParams(MeanParams):
    name: Literal["toy_momentum"]
    tags: ClassVar[AlgorithmTags] = AlgorithmTags(keeps_memory=True)


class Momentum(Mean):
    """Broken: a loaded strategy keeps the very tensor it was given (no copy), so it shares its memory."""

    def __init__(self, params, num_clients: int, like: torch.Tensor) -> None:
        super().__init__(params, num_clients, like)
        self.velocity = torch.zeros_like(like)

    def aggregate(self, global_params, updates, context) -> Aggregate:
        out = super().aggregate(global_params, updates, context)
        self.velocity.mul_(0.5).add_(out.params - global_params)
        return Aggregate(global_params + self.velocity, out.weights)

    def state_dict(self) -> dict:
        return {"velocity": self.velocity}

    def load_state_dict(self, state: dict) -> None:
        self.velocity = state["velocity"]


def test_a_strategy_from_outside_passes():
    check_strategy(MeanParams, Mean)


@pytest.mark.parametrize(
    ("params", "strategy", "message"),
    [
        (MeanParams, ClippingMean, "toy_mean mutated a delta"),
        (FirstComeParams, FirstCome, "toy_first_come depends on the arrival order"),
        (CountingParams, Counting, "toy_counting: tag keeps_memory is False but its state_dict"),
        (MomentumParams, Momentum, "toy_momentum: a loaded strategy shares memory with the original"),
    ],
)
def test_a_broken_strategy_fails_with_a_clear_message(params, strategy, message):
    with pytest.raises(AssertionError, match=message):
        check_strategy(params, strategy)


# --- an availability kind: online for the first p of every 10 s ------------------------------------------


class PeriodicSection(Section):
    kind: Literal["toy_periodic"]
    p: float = Field(default=0.5, gt=0, le=1)


class Periodic(AvailabilityModel):
    round_indexed = False
    period_s = 10.0

    def __init__(self, on_fraction: float) -> None:
        self.on_s = on_fraction * self.period_s

    def _start(self, t: float) -> float:
        return math.floor(t / self.period_s) * self.period_s

    def online(self, t: float, rnd: int) -> bool:
        return t < self._start(t) + self.on_s

    def next_offline(self, t: float, rnd: int) -> float:
        if not self.online(t, rnd):
            return t
        return math.inf if self.on_s >= self.period_s else self._start(t) + self.on_s

    def next_online(self, t: float) -> float:
        return t if self.online(t, 0) else self._start(t) + self.period_s


def _kind(model) -> AvailabilityKind:
    return AvailabilityKind(
        section=PeriodicSection,
        build=lambda spec, draw: lambda i: model(spec.p),
        probabilities=lambda spec, draw: [spec.p] * draw.num_clients,
        seeded=False,  # the same pattern whatever the seed
        examples=(("toy_periodic", {"kind": "toy_periodic", "p": 0.4}),),
    )


PERIODIC = _kind(Periodic)
NEVER_ALWAYS = _kind(lambda p: Periodic(min(p, 0.99)))  # broken: offline a moment per period even with p = 1


def test_an_availability_kind_from_outside_passes():
    check_availability_kind(PERIODIC)


def test_a_broken_availability_kind_fails_with_a_clear_message():
    with pytest.raises(AssertionError, match="toy_periodic: with p = 1 a client is offline or drops"):
        check_availability_kind(NEVER_ALWAYS)


def test_a_kind_without_examples_fails():
    bare = AvailabilityKind(PeriodicSection, PERIODIC.build, PERIODIC.probabilities)
    with pytest.raises(AssertionError, match="registers no examples"):
        check_availability_kind(bare)


@parametrize_with_checks([(MeanParams, Mean), PERIODIC])
def test_outside_registrations_through_pytest(registration, check):
    check(registration)


# --- capability and expected failures (scikit-learn's tags and expected_failed_checks) -------------------


def test_checks_are_chosen_by_the_tags():
    """check_load_state_dict_copies needs keeps_memory, check_server_k_is_enforced needs server_k: a
    memoryless toy is spared both, a toy with a memory gets the first."""
    ran = {outcome.check for outcome in check_strategy(MeanParams, Mean)}
    assert "check_load_state_dict_copies" not in ran and "check_server_k_is_enforced" not in ran
    assert {"check_tags", "check_aggregation_leaves_its_inputs_alone"} <= ran
    with pytest.raises(AssertionError, match="shares memory with the original"):  # it ran, and caught the toy
        check_strategy(MomentumParams, Momentum)


def test_an_expected_failure_is_reported_not_raised():
    """The broken toy that keeps its memory by reference: its author marks the one check it fails."""
    why = "toy_momentum hands its velocity over by reference, on purpose"
    outcomes = check_strategy(MomentumParams, Momentum, expected_failed_checks={"check_load_state_dict_copies": why})
    by_check = {outcome.check: outcome for outcome in outcomes}
    failed = by_check["check_load_state_dict_copies"]
    assert (failed.status, failed.reason) == ("xfail", why)
    assert "AssertionError: toy_momentum: a loaded strategy shares memory with the original" in failed.error
    assert all(o.status == "passed" for name, o in by_check.items() if name != "check_load_state_dict_copies")


def test_an_expected_failure_that_passes_is_reported_as_passed():
    """As scikit-learn's check_estimator: a check marked as expected to fail that passes is not an error."""
    outcomes = check_strategy(MeanParams, Mean, expected_failed_checks={"check_tags": "it does not fail"})
    assert [o.status for o in outcomes if o.check == "check_tags"] == ["passed"]


def test_other_failures_still_raise():
    with pytest.raises(AssertionError, match="toy_mean mutated a delta"):
        check_strategy(MeanParams, ClippingMean, expected_failed_checks={"check_tags": "not this one"})


def test_an_unknown_check_name_is_refused_with_the_list_of_checks():
    listed = r"check_typo; its checks are: check_tags, check_server_k_is_enforced, .*check_like_values_as_tagged"
    with pytest.raises(ValueError, match=r"names no check of a strategy \(toy_mean\): " + listed):
        check_strategy(MeanParams, Mean, expected_failed_checks={"check_typo": "?"})
    with pytest.raises(ValueError, match="names no check of an availability kind .*check_p_one_is_always_online"):
        check_availability_kind(PERIODIC, expected_failed_checks={"check_typo": "?"})
    with pytest.raises(ValueError, match="names no check of these registrations' suites: check_typo"):
        parametrize_with_checks([PERIODIC], expected_failed_checks={"check_typo": "?"})
    with pytest.raises(ValueError, match="names no check of toy_periodic's suite: check_tags; its checks are"):
        parametrize_with_checks([PERIODIC], expected_failed_checks=lambda r: {"check_tags": "a strategy's check"})


def test_an_availability_kind_marks_its_failing_check():
    why = "offline a moment per period even with p = 1"
    outcomes = check_availability_kind(NEVER_ALWAYS, expected_failed_checks={"check_p_one_is_always_online": why})
    assert [(o.example, o.status, o.reason) for o in outcomes if o.check == "check_p_one_is_always_online"] == [
        ("toy_periodic", "xfail", why)
    ]


@parametrize_with_checks(
    [(MomentumParams, Momentum), NEVER_ALWAYS],
    expected_failed_checks={
        "check_load_state_dict_copies": "toy_momentum shares its memory on purpose",
        "check_p_one_is_always_online": "toy_periodic is offline a moment per period",
    },
    xfail_strict=True,  # the two checks must fail: a pass would fail the test
)
def test_broken_registrations_through_pytest_with_expected_failures(registration, check):
    check(registration)


def test_pytest_marks_exactly_the_expected_failures():
    marked = parametrize_with_checks(
        [(MomentumParams, Momentum)], expected_failed_checks=lambda r: {"check_load_state_dict_copies": "by design"}
    )
    params = marked.args[1]
    xfails = [p.id for p in params if any(m.name == "xfail" for m in p.marks)]
    assert xfails == ["toy_momentum-check_load_state_dict_copies"]
    assert [m.kwargs for p in params for m in p.marks] == [{"reason": "by design", "strict": None}]
