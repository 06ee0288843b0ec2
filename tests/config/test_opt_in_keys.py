"""Opt-in feature keys (``json_schema_extra=OPT_IN``) are left out of config.yaml while at their default, so
a feature added later keeps the config.yaml of every scenario that does not use it byte-identical."""

from __future__ import annotations

import yaml
from pydantic import Field

from asyncfl.sections import OPT_IN, Section, resolved_dump


class Inner(Section):
    kind: str = "none"
    level: int = Field(default=3, json_schema_extra=OPT_IN)


class Outer(Section):
    plain: int = 1  # an ordinary key: always written, default or not
    feature: float = Field(default=0.0, json_schema_extra=OPT_IN)
    inner: Inner = Inner()
    items: list[Inner] = []


def test_an_opt_in_key_at_its_default_is_left_out_and_reads_back_the_same():
    section = Outer(items=[Inner(), Inner(level=5)])
    dump = resolved_dump(section)
    assert dump == {"plain": 1, "inner": {"kind": "none"}, "items": [{"kind": "none"}, {"kind": "none", "level": 5}]}
    assert Outer.model_validate(yaml.safe_load(yaml.safe_dump(dump))) == section


def test_an_opt_in_key_that_is_set_is_written():
    section = Outer(feature=0.3, inner=Inner(level=4))
    assert resolved_dump(section) == {"plain": 1, "feature": 0.3, "inner": {"kind": "none", "level": 4}, "items": []}
