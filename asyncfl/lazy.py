"""Modules imported on first use.

Algorithm modules hold both their torch code and their YAML parameter class; the schema imports them for
the parameter classes, and validating a scenario must not pay for importing torch.  So they write
``from asyncfl.lazy import torch``: a stand-in that imports the real torch on its first attribute access
(a run's first tensor) and from then on reads its attributes directly.  Module-level code of such a
module must not touch ``torch``.

Unlike the standard library's ``importlib.util.LazyLoader``, nothing is registered in ``sys.modules``
until torch is really imported: libraries that look for ``"torch" in sys.modules`` and then touch it
(scipy's array-API layer does, when ``asyncfl report`` imports scipy.stats) would otherwise import all of
torch for nothing.
"""

from __future__ import annotations

import importlib
import sys
import types


class LazyModule(types.ModuleType):
    """Module ``name``, imported when one of its attributes is first read."""

    def __getattr__(self, attribute: str) -> object:
        module = importlib.import_module(self.__name__)
        self.__dict__.update(vars(module))  # later reads are plain attribute reads, not this method
        return getattr(module, attribute)


def is_loaded(name: str) -> bool:
    """Whether module ``name`` has really been imported."""
    return name in sys.modules


torch = LazyModule("torch")
