"""``logreg``: multinomial logistic regression, one linear layer on the flattened input."""

from __future__ import annotations

import math
from typing import Any

from asyncfl.learn.models._base import ModelSpec


def build(input_shape: tuple[int, ...], num_classes: int, **options: Any) -> Any:
    from torch import nn

    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), num_classes))


MODEL = ModelSpec("logreg", build, order=10)
