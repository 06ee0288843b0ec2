"""``parametrize_with_checks`` for pytest (the one module of :mod:`asyncfl.testing` that imports it)::

    @parametrize_with_checks(list(KINDS.values()))
    def test_contract(registration, check):
        check(registration)

One test case per (registration, check) pair that applies to the registration's tags, with readable ids
(``markov-markov_time-check_...``); a check that runs on one example of the registration comes bound to it.
``expected_failed_checks`` ({check name: why}, or a function of the registration returning one) marks those
cases ``pytest.mark.xfail(reason=why, strict=xfail_strict)`` (:mod:`asyncfl.testing.suite`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pytest

from asyncfl.algorithms.base import AlgorithmParams
from asyncfl.algorithms.server_optimizers import ServerOptimizerKind
from asyncfl.learn.compression import Compressor
from asyncfl.sim.availability import AvailabilityKind
from asyncfl.sim.selection import SelectionKind
from asyncfl.sim.servers import ServerMode
from asyncfl.testing import algorithm, availability, compression, selection, server_mode, server_optimizer, strategy
from asyncfl.testing.suite import expected_failures, names


def _bound(check: Callable, example: str | None) -> Callable:
    if example is None:
        return check
    bound = functools.partial(check, example=example)
    functools.update_wrapper(bound, check)
    return bound


def checks(registration: Any) -> Iterator[tuple[Any, Callable, str]]:
    """(registration, check, id) for every check that applies to ``registration``: an algorithm's section
    (or :class:`~asyncfl.testing.algorithm.Algorithm`, or a (section, strategy class) pair), an
    :class:`AvailabilityKind`, a :class:`ServerMode`, a :class:`ServerOptimizerKind`, a :class:`Compressor` or a
    :class:`SelectionKind`."""
    registration, pairs, _ = _suite(registration)
    for example, check in pairs:
        yield registration, _bound(check, example), "-".join(filter(None, (registration.name, example, check.__name__)))


def _suite(registration: Any) -> tuple[Any, Iterable[tuple[str | None, Callable]], list[str]]:
    """The registration as its suite takes it, its (example, check) pairs that apply, and every check name of
    the suite."""
    if isinstance(registration, tuple):
        registration = algorithm.Algorithm(*registration)
    if isinstance(registration, type) and issubclass(registration, AlgorithmParams):
        registration = algorithm.algorithm(registration)
    if isinstance(registration, algorithm.Algorithm):
        pairs = [(None, check) for check in strategy.checks_of(registration)]
        return registration, pairs, names(strategy.CHECKS)
    if isinstance(registration, Compressor):
        return registration, [(None, check) for check in compression.CHECKS], names(compression.CHECKS)
    suites = (
        (AvailabilityKind, availability, availability.ALL_CHECKS),
        (ServerMode, server_mode, server_mode.ALL_CHECKS),
        (ServerOptimizerKind, server_optimizer, server_optimizer.CHECKS),
        (SelectionKind, selection, selection.ALL_CHECKS),
    )
    for entry_type, module, every in suites:
        if isinstance(registration, entry_type):
            return registration, list(module.checks_of(registration)), names(every)
    raise TypeError(f"not a registration asyncfl.testing can check: {registration!r}")


def parametrize_with_checks(
    registrations: Iterable[Any],
    *,
    expected_failed_checks: Mapping[str, str] | Callable[[Any], Mapping[str, str] | None] | None = None,
    xfail_strict: bool | None = None,
):
    """A ``pytest.mark.parametrize("registration, check", ...)`` over every check that applies to every
    registration; the checks in ``expected_failed_checks`` (the same for all, or a function of the
    registration) are marked ``xfail`` with their reason (``xfail_strict``: whether a pass then fails the
    test; None: pytest's ``xfail_strict`` option).  A name that is no check of the registration's suite (for a
    function) or of any of the registrations' suites (for one mapping) is refused."""
    suites = [_suite(given) + (given,) for given in registrations]
    if not callable(expected_failed_checks):  # one mapping for all: each name must be some suite's check
        every = list(dict.fromkeys(name for _, _, known, _ in suites for name in known))
        shared = expected_failures(expected_failed_checks, every, "these registrations' suites")
    params = []
    for registration, pairs, known, given in suites:
        if callable(expected_failed_checks):
            expected = expected_failures(expected_failed_checks(given), known, f"{registration.name}'s suite")
        else:
            expected = shared
        for example, check in pairs:
            case_id = "-".join(filter(None, (registration.name, example, check.__name__)))
            reason = expected.get(check.__name__)
            marks = [pytest.mark.xfail(reason=reason, strict=xfail_strict)] if reason is not None else []
            params.append(pytest.param(registration, _bound(check, example), id=case_id, marks=marks))
    return pytest.mark.parametrize("registration, check", params)
