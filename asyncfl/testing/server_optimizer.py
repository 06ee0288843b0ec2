"""Contract checks for a server optimizer (``algorithm.server_optimizer.kind``): every registered kind is
held to them by tests/testing/test_server_optimizer_contract.py, over the specs its registration names
(``ServerOptimizerKind.examples``).

A built optimizer maps (x_t, x_new) to x_{t+1} without touching its inputs, keeps dtype, shape and
device, leaves the model where it is while every pseudo-gradient so far is zero, moves along a constant
pseudo-gradient, is deterministic, and its ``state_dict`` holds copies that continue bitwise after
``load_state_dict`` into a fresh one.  Built on a ``like`` of another dtype (``algorithm.memory``), it
keeps its memory in that dtype and steps in the model's.  A kind whose ``build`` gives None (``none``)
is the algorithm's own step: it must validate and be what a scenario gets by default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from asyncfl.algorithms.server_optimizers import REGISTRY, ServerOptimizerKind
from asyncfl.config import validate_scenario
from asyncfl.testing.suite import CheckOutcome, expected_failures, names, run_checks

DIM, STEPS = 5, 6


def kind_of(kind: str | ServerOptimizerKind) -> ServerOptimizerKind:
    if isinstance(kind, ServerOptimizerKind):
        return kind
    if kind not in REGISTRY:
        raise ValueError(f"no server optimizer named {kind!r}; registered: {', '.join(REGISTRY)}")
    return REGISTRY[kind]


def specs(kind: ServerOptimizerKind) -> Iterator[Any]:
    """Each example as the validated section of a fedavg scenario (how a run gets it)."""
    for example in kind.examples:
        raw = {"algorithm": {"name": "fedavg", "server_optimizer": {"kind": kind.name, **example}}}
        yield validate_scenario(raw, source="<contract>").algorithm.server_optimizer


def _like(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.linspace(-1.0, 1.0, DIM, dtype=dtype)


def _deltas(dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    deltas = [torch.randn(DIM, generator=generator, dtype=dtype) for _ in range(STEPS)]
    deltas[2][1] = 0.0  # a zero coordinate mid-run (Yogi's sign(v - 0))
    return deltas


def _run(optimizer: Any, x: torch.Tensor, deltas: list[torch.Tensor]) -> list[torch.Tensor]:
    out = []
    for delta in deltas:
        x = optimizer.step(x, x + delta)
        out.append(x)
    return out


def _built(kind: ServerOptimizerKind) -> Iterator[tuple[Any, Callable[[], Any]]]:
    for spec in specs(kind):
        if kind.build(spec, _like()) is not None:
            yield spec, lambda spec=spec, dtype=torch.float32: kind.build(spec, _like(dtype))


def check_examples_validate_and_none_is_the_default(kind) -> None:
    kind = kind_of(kind)
    assert kind.examples, f"{kind.name}: the registration names no example spec"
    assert list(specs(kind)), kind.name
    default = validate_scenario({}, source="<contract>").algorithm.server_optimizer
    assert kind_of(default.kind).build(default, _like()) is None, "the default server optimizer must be none"


def check_inputs_untouched_and_dtype_shape_device_kept(kind) -> None:
    kind = kind_of(kind)
    for spec, build in _built(kind):
        for dtype in (torch.float32, torch.float64):
            optimizer, x, delta = build(dtype=dtype), _like(dtype), _deltas(dtype)[0]
            proposed = x + delta
            x_copy, proposed_copy = x.clone(), proposed.clone()
            new = optimizer.step(x, proposed)
            assert torch.equal(x, x_copy) and torch.equal(proposed, proposed_copy), f"{kind.name}: inputs mutated"
            assert new.dtype == dtype and new.shape == x.shape and new.device == x.device, f"{kind.name}: {spec}"
            assert bool(torch.isfinite(new).all()), f"{kind.name}: {spec} gave a non-finite step"


def check_zero_pseudo_gradients_keep_the_model(kind) -> None:
    kind = kind_of(kind)
    for spec, build in _built(kind):
        optimizer, x = build(), _like()
        for _ in range(3):
            new = optimizer.step(x, x.clone())
            assert torch.equal(new, x), f"{kind.name}: {spec} moved the model on zero pseudo-gradients"


def check_moves_along_a_constant_pseudo_gradient(kind) -> None:
    """A constant Delta (no zero coordinate): every step moves each coordinate in Delta's direction."""
    kind = kind_of(kind)
    delta = torch.tensor([0.5, -0.25, 1.0, -2.0, 0.125])
    for spec, build in _built(kind):
        optimizer, x = build(), _like()
        for _ in range(4):
            new = optimizer.step(x, x + delta)
            assert torch.equal(torch.sign(new - x), torch.sign(delta)), f"{kind.name}: {spec} moved against Delta"
            x = new


def check_deterministic(kind) -> None:
    kind = kind_of(kind)
    for spec, build in _built(kind):
        first, second = _run(build(), _like(), _deltas()), _run(build(), _like(), _deltas())
        assert all(torch.equal(a, b) for a, b in zip(first, second)), f"{kind.name}: {spec} not deterministic"


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, (torch.Tensor, int, float, str, bool, type(None)))


def check_state_round_trip_continues_bitwise(kind) -> None:
    kind = kind_of(kind)
    deltas = _deltas()
    for spec, build in _built(kind):
        original, x = build(), _like()
        for delta in deltas[:3]:
            x = original.step(x, x + delta)
        saved = original.state_dict()
        assert _plain(saved), f"{kind.name}: state_dict holds more than tensors and plain values"
        kept = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in saved.items()}
        continued = _run(original, x, deltas[3:])
        assert all(torch.equal(saved[k], kept[k]) for k in kept if isinstance(kept[k], torch.Tensor)), (
            f"{kind.name}: state_dict shares memory with the live optimizer"
        )
        fresh = build()
        fresh.load_state_dict(saved)
        resumed = _run(fresh, x, deltas[3:])
        assert all(torch.equal(a, b) for a, b in zip(continued, resumed)), f"{kind.name}: {spec} resume differs"


def check_memory_kept_in_the_dtype_it_was_built_with(kind) -> None:
    """Built on a bfloat16 ``like`` (``algorithm.memory.dtype: bfloat16``) and stepped with float32 models,
    an optimizer keeps its state in bfloat16 and returns float32 models near those of a float32-built one."""
    kind = kind_of(kind)
    deltas = [0.1 * d for d in _deltas()]
    for spec, build in _built(kind):
        half = kind.build(spec, _like(torch.bfloat16))
        got, expected = _run(half, _like(), deltas), _run(build(), _like(), deltas)
        assert all(a.dtype == torch.float32 for a in got), f"{kind.name}: {spec} returned the memory's dtype"
        dtypes = {v.dtype for v in half.state_dict().values() if isinstance(v, torch.Tensor)}
        assert dtypes <= {torch.bfloat16}, f"{kind.name}: {spec} keeps its memory in {dtypes}, not bfloat16"
        gap = max(float((a - b).abs().max()) for a, b in zip(got, expected))
        scale = max(float((b - _like()).abs().max()) for b in expected)
        assert gap <= 0.05 * scale + 1e-3, f"{kind.name}: {spec} bfloat16 memory moved the model {gap} away"


CHECKS: tuple[Callable, ...] = (
    check_examples_validate_and_none_is_the_default,
    check_inputs_untouched_and_dtype_shape_device_kept,
    check_zero_pseudo_gradients_keep_the_model,
    check_moves_along_a_constant_pseudo_gradient,
    check_deterministic,
    check_state_round_trip_continues_bitwise,
    check_memory_kept_in_the_dtype_it_was_built_with,
)


def checks_of(kind) -> Iterator[tuple[str | None, Callable]]:
    """(None, check) for every check (each runs over all of the kind's examples)."""
    kind_of(kind)
    for check in CHECKS:
        yield None, check


def check_server_optimizer(kind, *, expected_failed_checks: dict[str, str] | None = None) -> list[CheckOutcome]:
    """Run every server-optimizer check on one kind (its name or registration); AssertionError on the first
    broken contract, except for the checks in ``expected_failed_checks`` ({check name: why}: reported as
    ``xfail``, see :mod:`asyncfl.testing.suite`)."""
    registration = kind_of(kind)
    what = f"a server optimizer ({registration.name})"
    expected = expected_failures(expected_failed_checks, names(CHECKS), what)
    return run_checks(((c.__name__, None, lambda c=c: c(registration)) for _, c in checks_of(registration)), expected)
