"""Every compressor of the schema held to the public compressor contract (asyncfl.testing.compression):
shape and dtype kept, the same stream giving the same upload, zero sent as zero, error feedback adding
up, and an upload size that is a positive int growing with the parameter count."""

from __future__ import annotations

import typing

from asyncfl.config.problems import tag_of
from asyncfl.learn.compression import REGISTRY, Compression
from asyncfl.testing.parametrize import parametrize_with_checks


@parametrize_with_checks(list(REGISTRY.values()))
def test_contract(registration, check):
    check(registration)


def test_every_compressor_of_the_schema_is_checked():
    union = typing.get_args(Compression)[0]
    assert set(REGISTRY) == {tag_of(member) for member in typing.get_args(union)}
