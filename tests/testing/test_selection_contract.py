"""Every selection kind of the schema held to the public selection contract
(asyncfl.testing.selection) on its own examples (``KIND.examples`` in each module of
asyncfl/sim/selection/): sorted unique candidates of the right size, deterministic by seed, a state
that round-trips, and a short run in every server mode it lists."""

from __future__ import annotations

import typing

from asyncfl.config.problems import tag_of
from asyncfl.config.schema import Server
from asyncfl.sim.selection import KINDS
from asyncfl.testing.parametrize import parametrize_with_checks


@parametrize_with_checks(list(KINDS.values()))
def test_contract(registration, check):
    check(registration)


def test_every_kind_of_the_schema_is_checked():
    union = Server.model_fields["selection"].annotation  # pydantic keeps the Annotated metadata apart
    assert set(KINDS) == {tag_of(member) for member in typing.get_args(union)}
    names = [name for kind in KINDS.values() for name, _ in kind.examples]
    assert len(set(names)) == len(names)  # example names are test ids
