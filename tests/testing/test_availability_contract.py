"""Every availability kind of the schema held to the public availability contract
(asyncfl.testing.availability) on its own examples (``KIND.examples`` in each module of
asyncfl/sim/availability/): consistent answers, independent of the asking order, deterministic by seed,
online a fraction p_i of the time (with a tiny p and with p = 1 too).  A kind registered without
examples fails its ``check_examples_are_declared``."""

from __future__ import annotations

import typing

from asyncfl.config.population import Availability
from asyncfl.config.problems import tag_of
from asyncfl.sim.availability import KINDS
from asyncfl.testing.parametrize import parametrize_with_checks


@parametrize_with_checks(list(KINDS.values()))
def test_contract(registration, check):
    check(registration)


def test_every_kind_of_the_schema_is_checked():
    union = typing.get_args(Availability)[0]
    assert set(KINDS) == {tag_of(member) for member in typing.get_args(union)}
    names = [name for kind in KINDS.values() for name, _ in kind.examples]
    assert len(set(names)) == len(names)  # example names are test ids
