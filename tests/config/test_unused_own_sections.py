"""``data.<dataset>`` and ``model.<name>`` keys of a data set or model the scenario does not use are refused
naming the key and the value that would read them, as a key of another server mode is, not ignored."""

from __future__ import annotations

import pytest

from asyncfl.config import Scenario
from asyncfl.errors import ConfigError


@pytest.mark.parametrize(
    "keys, expected",
    [
        (
            {"data": {"dataset": "digits", "clients": 4, "shakespeare": {"role_seed": 3}}},
            "data.shakespeare (role_seed: 3): used only with data.dataset shakespeare, but data.dataset is digits, "
            "where it would be ignored; remove data.shakespeare (or set data.dataset: shakespeare)",
        ),
        (
            {"data": {"dataset": "digits", "clients": 4, "mnist1d": {"train_samples": 500}}},
            "data.mnist1d (train_samples: 500): used only with data.dataset mnist1d, but data.dataset is digits",
        ),
        (
            {"model": {"name": "mlp", "lstm_shakespeare": {"units": 64}}},
            "model.lstm_shakespeare (units: 64): used only with model.name lstm_shakespeare, but model.name is mlp",
        ),
    ],
)
def test_a_section_of_an_unused_data_set_or_model_is_refused(keys, expected):
    with pytest.raises(ConfigError) as raised:
        Scenario.from_dict({"stop": {"rounds": 1}, **keys})
    assert expected in str(raised.value)


def test_defaults_written_back_are_not_refused():
    """A run's config.yaml states every own section at its defaults: it reads back."""
    scenario = Scenario.from_dict({"data": {"dataset": "digits", "clients": 4}, "stop": {"rounds": 1}})
    assert Scenario.from_dict(scenario.model_dump(mode="json")).data.shakespeare == scenario.data.shakespeare
