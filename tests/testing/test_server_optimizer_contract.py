"""Every registered server optimizer (algorithm.server_optimizer.kind) held to the contract of
asyncfl.testing.server_optimizer: inputs untouched, no move on zero pseudo-gradients, moves along a
constant one, deterministic, state round trips continue bitwise; none is the default."""

from __future__ import annotations

from asyncfl.algorithms.server_optimizers import REGISTRY
from asyncfl.testing import check_server_optimizer
from asyncfl.testing.parametrize import parametrize_with_checks


@parametrize_with_checks(list(REGISTRY.values()))
def test_contract(registration, check):
    check(registration)


def test_every_kind_of_the_brief_is_registered_in_order():
    assert list(REGISTRY) == ["none", "avgm", "adagrad", "adam", "yogi"]


def test_check_server_optimizer_runs_every_check_by_name():
    check_server_optimizer("adam")
