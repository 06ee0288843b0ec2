"""Modules imported on first use: the standard library's recipe (importlib docs, "Implementing lazy imports").

Algorithm modules hold both their torch code and their YAML parameter class; the schema imports them for
the parameter classes, and validating a scenario must not pay for importing torch.  So they write
``from asyncfl.lazy import torch``: ``torch`` is then the real module, executed on its first attribute
access (a run's first tensor).  Module-level code of such a module must not touch ``torch``.
"""

from __future__ import annotations

import importlib.util
import sys
import types


def lazy_module(name: str) -> types.ModuleType:
    """``name``, imported as usual if it already is, else registered now and executed on first use."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def is_loaded(name: str) -> bool:
    """Whether ``name`` has been executed (a lazy module not touched yet has not)."""
    module = sys.modules.get(name)
    return module is not None and not isinstance(module, importlib.util._LazyModule)


torch = lazy_module("torch")
