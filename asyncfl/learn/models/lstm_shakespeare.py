"""``lstm_shakespeare``: LEAF's Shakespeare model (Caldas et al. 2018, "LEAF: A Benchmark for Federated
Settings"): an 8-dimensional character embedding, two LSTM layers of 256 units and a linear layer to the
80-character vocabulary, read at the window's last character (819,920 parameters).

Its own section, ``model.lstm_shakespeare``, states the sizes; the defaults are LEAF's.  Smaller ``units``
make a cheaper model (the tests use 16); a run that changes them is no longer LEAF's model."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from asyncfl.learn.models._base import ModelSpec
from asyncfl.sections import Section


class LstmShakespeare(Section):
    """Sizes of LEAF's character LSTM (its defaults)."""

    embedding: int = Field(default=8, ge=1, description="character embedding dimension (LEAF: 8)")
    units: int = Field(default=256, ge=1, description="units of each LSTM layer (LEAF: 256)")
    layers: int = Field(default=2, ge=1, description="stacked LSTM layers (LEAF: 2)")


def build(input_shape: tuple[int, ...], num_classes: int, params: LstmShakespeare | None = None, **options: Any) -> Any:
    from asyncfl.learn.models._char_lstm import CharLSTM  # torch: only when a model is built

    if len(input_shape) != 1:
        raise ValueError(f"lstm_shakespeare needs windows of character indices (length,), got shape {input_shape}")
    params = params or LstmShakespeare()
    return CharLSTM(num_classes, params.embedding, params.units, params.layers)


MODEL = ModelSpec(
    "lstm_shakespeare",
    build,
    inputs=("text",),
    needs="reads windows of characters",
    params=LstmShakespeare,
    order=60,
)
