"""``mlp``: ``model.layers`` ReLU layers of ``model.hidden`` units each, then a linear classifier."""

from __future__ import annotations

import math
from typing import Any

from asyncfl.learn.models._base import ModelSpec


def build(input_shape: tuple[int, ...], num_classes: int, hidden: int = 200, layers: int = 1, **options: Any) -> Any:
    from torch import nn

    body: list[nn.Module] = [nn.Flatten()]
    for width_in in [math.prod(input_shape)] + [hidden] * (layers - 1):
        body += [nn.Linear(width_in, hidden), nn.ReLU()]
    return nn.Sequential(*body, nn.Linear(hidden, num_classes))


MODEL = ModelSpec("mlp", build, order=20)
