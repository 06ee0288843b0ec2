"""An availability model's optional capabilities are declared methods of AvailabilityModel with documented
defaults (issue 45, design), not attributes probed with getattr: a model that answers only the three
questions gets the defaults, a kind whose models are not AvailabilityModels is refused naming it, and the
contract suite holds every capability to the three answers."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from pydantic import Field

from asyncfl.config import ConfigError
from asyncfl.sim.availability import AvailabilityKind, AvailabilityModel, Draw
from asyncfl.sim.availability.base import Section
from asyncfl.testing.availability import check_capabilities_agree_with_the_answers, check_models_are_availability_models


class Halves(AvailabilityModel):
    """Online during the first half of every 40 s: [0, 20), [40, 60), [80, 100) ..."""

    def online(self, t: float, rnd: int) -> bool:
        return t % 40 < 20

    def next_offline(self, t: float, rnd: int) -> float:
        return (t // 40) * 40 + 20 if self.online(t, rnd) else t

    def next_online(self, t: float) -> float:
        return t if self.online(t, rnd=0) else (t // 40 + 1) * 40


def test_a_model_answering_three_questions_gets_every_default():
    model = Halves()
    assert model.round_indexed is False and model.schedule is None
    assert model.why_not(5.0, 0) is None and model.why_not(25.0, 0) == "offline"
    assert model.next_cut(5.0, 0) == (20.0, "offline")
    assert model.earliest_online(25.0) == 40.0 and model.next_online_within(25.0, 30.0) == 40.0
    assert model.offline_seconds(100.0) == 40.0  # offline [20, 40) and [60, 80)
    assert model.offline_seconds(70.0) == 30.0  # [20, 40) and [60, 70)
    states = model.online_in_rounds(np.array([0, 1, 2]), np.array([10.0, 30.0, 50.0]))
    assert states.tolist() == [True, False, True]  # online(start, round) round by round


class HalvesSection(Section):
    kind: Literal["halves"]
    p: float = Field(default=0.5, gt=0, le=1)


class Plain:  # the three answers, but no AvailabilityModel
    round_indexed = False
    online, next_offline, next_online = Halves.online, Halves.next_offline, Halves.next_online


def _kind(model) -> AvailabilityKind:
    return AvailabilityKind(section=HalvesSection, build=lambda spec, draw: lambda i: model(),
                            probabilities=lambda spec, draw: [0.5] * draw.num_clients, seeded=False,
                            examples=(("halves", {"kind": "halves"}),))  # fmt: skip


def test_a_kind_whose_models_are_not_availability_models_is_refused():
    kind = _kind(Plain)
    with pytest.raises(ConfigError) as err:
        kind.models(HalvesSection(kind="halves"), Draw(2, 0))(0)
    assert str(err.value).startswith(
        "population.availability: kind 'halves' built a Plain, which is not an "
        "asyncfl.sim.availability.AvailabilityModel; subclass it"
    )
    with pytest.raises(AssertionError, match="the model is a Plain, not an asyncfl.sim.availability.AvailabilityModel"):
        check_models_are_availability_models(kind)
    check_models_are_availability_models(_kind(Halves))


class Underreports(Halves):
    def offline_seconds(self, until: float) -> float:  # a faster count that forgot the last period
        return super().offline_seconds(until) - 20.0


def test_the_contract_holds_an_override_to_the_answers():
    check_capabilities_agree_with_the_answers(_kind(Halves))
    with pytest.raises(AssertionError, match=re.escape("halves: offline_seconds(2000) = 980.0, but its offline")):
        check_capabilities_agree_with_the_answers(_kind(Underreports))
    assert math.isclose(Halves().offline_seconds(2000.0), 1000.0)


def test_the_simulation_asks_no_model_whether_it_has_a_capability():
    sim = Path(__file__).resolve().parents[2] / "asyncfl" / "sim"
    probes = [f"{p.name}: {line.strip()}" for p in sim.rglob("*.py") for line in p.read_text().splitlines()
              if re.search(r"getattr\((availability|model)\b", line)]  # fmt: skip
    assert probes == []
