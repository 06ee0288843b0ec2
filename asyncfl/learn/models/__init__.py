"""Models of the learning world, one module per ``model.name`` value (logistic regression, MLP,
LeNet-5, ResNet-18 with GroupNorm, a 1-D CNN, LEAF's FEMNIST CNN and character LSTM).

Each module sets ``MODEL`` to a :class:`ModelSpec`: its name, the data-set inputs it accepts and its
builder (see :mod:`asyncfl.registry`).  The schema's ``model.name`` values and its model/data
check are built from this registry, so model modules import torch inside their builder only.
"""

from __future__ import annotations

from typing import Any

from asyncfl.learn.models._base import ModelSpec
from asyncfl.registry import Registry, discover

REGISTRY: Registry = discover(__name__, __path__, "MODEL", entry_type=ModelSpec, axis="model.name")


def build_model(
    name: str,
    input_shape: tuple[int, ...],
    num_classes: int,
    hidden: int = 200,
    layers: int = 1,
    params: Any = None,
) -> Any:
    """A fresh ``torch.nn.Module``; ``hidden`` and ``layers`` shape the mlp only: ``layers`` ReLU layers of
    ``hidden`` units each.  ``params``: the model's own section (``model.<name>``), if it registers one
    (None: its defaults)."""
    if name not in REGISTRY:
        raise ValueError(f"unknown model {name!r}; available: {', '.join(REGISTRY)}")
    spec = REGISTRY[name]
    own = {} if spec.params is None else {"params": params if params is not None else spec.params()}
    return spec.build(tuple(input_shape), num_classes, hidden=hidden, layers=layers, **own)


def build_model_of(section: Any, input_shape: tuple[int, ...], num_classes: int) -> Any:
    """:func:`build_model` from a scenario's ``model`` section (its shared keys, and its own
    ``model.<name>`` section where the model registers one)."""
    own = getattr(section, section.name, None) if REGISTRY[section.name].params is not None else None
    return build_model(section.name, input_shape, num_classes, section.hidden, section.layers, own)


def parameter_count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


__all__ = ["REGISTRY", "ModelSpec", "build_model", "build_model_of", "parameter_count"]
