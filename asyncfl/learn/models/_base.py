"""What a model module registers (see :mod:`asyncfl.learn.models`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# build(input_shape, num_classes, **options) -> torch.nn.Module; options are the model section's shared
# keys (hidden, layers) and, for a model with a section of its own, ``params`` (its ``model.<name>`` keys).
# It imports torch itself: model modules are imported when a scenario is validated.
Build = Callable[..., Any]


@dataclass(frozen=True)
class ModelSpec:
    """A ``model.name`` value.

    ``inputs``: the kinds of data-set inputs it accepts (``signals``, ``images``; see
    :class:`asyncfl.learn.datasets.DataSet`): the schema refuses other data sets, saying why with
    ``needs`` (e.g. "convolves over one-dimensional signals").  ``params``: an optional section of its
    own keys, read from ``model.<name>:`` and handed to the builder as ``params``.  ``order`` places it
    among the allowed values (messages, reference); new models sort last by name.
    """

    name: str
    build: Build
    inputs: tuple[str, ...] = ("signals", "images")
    needs: str = ""
    params: type | None = None
    order: int = 1000
