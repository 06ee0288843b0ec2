"""Pickles read as plain data only (a leaf: the trace converter and the CIFAR-10 reader both read
pickles from the internet).  A pickle runs whatever callable it names when it is read
(``__reduce__`` -> ``os.system``, ...), so a plain ``pickle.load`` executes its author's code;
:func:`load_restricted` resolves only the globals its caller allows and refuses any other before
calling anything."""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any, BinaryIO

from asyncfl.errors import ConfigError

Allowed = Mapping[str, Set[str]]  # module -> the names of it a pickle may name

# Plain data: pickle writes dicts, lists, ints, floats and strings as opcodes that name no global; these
# cover other writers of the same data (sets, tuples, an OrderedDict or defaultdict) and run no code.
PLAIN: dict[str, frozenset[str]] = {
    "builtins": frozenset(
        {"dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "str", "bytes", "bool"}
    ),
    "collections": frozenset({"OrderedDict", "defaultdict"}),
}
PLAIN["__builtin__"] = PLAIN["builtins"]  # Python 2 pickles (fix_imports maps them)

# numpy arrays and scalars as numpy pickles them (numpy 1 names numpy.core, numpy 2 numpy._core; protocol
# 2 writes bytes through _codecs.encode, protocol 5 arrays through _frombuffer): each only builds an array
# or a dtype from the bytes that follow (the same list as torch.load's weights_only unpickler).
NUMPY: dict[str, frozenset[str]] = {
    "numpy": frozenset({"ndarray", "dtype"}),
    "numpy.core.multiarray": frozenset({"_reconstruct", "scalar"}),
    "numpy._core.multiarray": frozenset({"_reconstruct", "scalar"}),
    "numpy.core.numeric": frozenset({"_frombuffer"}),
    "numpy._core.numeric": frozenset({"_frombuffer"}),
    "_codecs": frozenset({"encode"}),
}


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global its reader does not allow: reading on could run its code."""

    def __init__(self, module: str, name: str):
        super().__init__(f"{module}.{name}")
        self.qualified = f"{module}.{name}"


class RestrictedUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only the globals of ``allowed``."""

    def __init__(self, file: BinaryIO, allowed: Allowed, encoding: str = "ASCII") -> None:
        super().__init__(file, encoding=encoding)
        self.allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        if name not in self.allowed.get(module, ()):
            raise RefusedGlobal(module, name)
        return super().find_class(module, name)


def load_restricted(path: Path, allowed: Allowed, what: str, encoding: str = "ASCII") -> Any:
    """The object pickled in ``path``, naming only ``allowed`` globals; ``what`` (what the file should
    hold) ends every refusal.  ``encoding``: how Python 2 ``str`` objects are read (``latin1`` for
    byte data)."""
    try:
        with open(path, "rb") as handle:
            return RestrictedUnpickler(handle, allowed, encoding).load()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file: {exc.strerror}.") from None
    except RefusedGlobal as exc:
        shown = "; ".join(f"{m}: {', '.join(sorted(n))}" for m, n in allowed.items() if m != "__builtin__")
        raise ConfigError(
            f"{path}: refused to unpickle the global {exc.qualified}: reading a pickle can run code, so only "
            f"plain data is accepted (allowed globals: {shown}); expected {what}.  Nothing was executed."
        ) from None
    except Exception as exc:  # noqa: BLE001 - any unpickling problem means "not this format"
        raise ConfigError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc}); expected {what}.") from None
