"""How a contract suite chooses the checks that apply to a registration, and how a plug-in author marks a check
as expected to fail (scikit-learn's ``_yield_all_checks`` and ``expected_failed_checks``).

A check that only makes sense for some registrations says which of their tags it needs, with
:func:`requires` (``@requires("keeps_memory")``): the suite runs it on a registration whose tags (an
:class:`~asyncfl.algorithms.base.AlgorithmTags`, a :class:`~asyncfl.sim.selection.SelectionTags`) have every
named field truthy, and leaves it out otherwise.  No check names a registration.

``expected_failed_checks={"check_name": "why"}`` runs those checks too, as scikit-learn's ``check_estimator``
does: a failure of one of them is reported (an outcome ``xfail`` with the reason) instead of raised, and a
pass is simply ``passed`` (not an error).  Under pytest (:func:`asyncfl.testing.parametrize.
parametrize_with_checks`) they are marked ``pytest.mark.xfail(reason=why)``, so a pass shows as XPASS, and
fails the test only with ``xfail_strict=True`` (or pytest's ``xfail_strict`` option).  A name that is not one
of the suite's checks is refused, listing them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal


def requires(*capabilities: str) -> Callable[[Callable], Callable]:
    """Mark a check as applying only to registrations whose tags have every one of ``capabilities`` set."""

    def mark(check: Callable) -> Callable:
        check.requires = capabilities  # type: ignore[attr-defined]
        return check

    return mark


def applies(check: Callable, tags: Any) -> bool:
    """Whether ``check`` applies to a registration with these tags (:func:`requires`)."""
    return all(getattr(tags, capability) for capability in getattr(check, "requires", ()))


def names(checks: Iterable[Callable]) -> list[str]:
    return [check.__name__ for check in checks]


def expected_failures(expected: Mapping[str, str] | None, known: Sequence[str], what: str) -> dict[str, str]:
    """``expected`` ({check name: reason}) after refusing a name that is none of the ``known`` checks of ``what``."""
    expected = dict(expected or {})
    unknown = sorted(set(expected) - set(known))
    if unknown:
        raise ValueError(
            f"expected_failed_checks names no check of {what}: {', '.join(unknown)}; its checks are: {', '.join(known)}"
        )
    return expected


@dataclass(frozen=True)
class CheckOutcome:
    """One check run by a ``check_*`` function: ``passed``, or ``xfail`` (an expected failure, with its reason
    and what the check said)."""

    check: str
    example: str | None
    status: Literal["passed", "xfail"]
    reason: str = ""
    error: str = ""


def example_cases(registration, pairs: Iterable[tuple[str, Callable]]) -> Iterator[tuple[str, str, Callable[[], None]]]:
    """The (check name, example, call) cases of :func:`run_checks` for (example, check) pairs: each check
    called on ``registration`` and that example."""
    for example, check in pairs:
        yield check.__name__, example, (lambda check=check, example=example: check(registration, example))


def run_checks(
    cases: Iterable[tuple[str, str | None, Callable[[], None]]], expected: Mapping[str, str]
) -> list[CheckOutcome]:
    """Run every (check name, example, call) case in order; a failure of a check not in ``expected`` is raised
    (the first broken contract), one of a check in it is an ``xfail`` outcome."""
    outcomes = []
    for name, example, call in cases:
        if name not in expected:
            call()
            outcomes.append(CheckOutcome(name, example, "passed"))
            continue
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - whatever the check raised is what was expected
            outcomes.append(CheckOutcome(name, example, "xfail", expected[name], f"{type(exc).__name__}: {exc}"))
        else:
            outcomes.append(CheckOutcome(name, example, "passed"))
    return outcomes
