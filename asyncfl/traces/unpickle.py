"""Reading FedScale's pickles as plain data only: a pickle runs whatever callable it names when it is
read, so these files (from the internet) are read with an unpickler that refuses every other global."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from asyncfl.errors import ConfigError

# The only globals a trace pickle may name.  FedScale's files hold dicts, lists, ints, floats and strings,
# which pickle writes as opcodes that name no global at all; these few cover other writers of the same
# data (sets, tuples, an OrderedDict or defaultdict, numpy float scalars) and run no code when called.
SAFE_GLOBALS = {
    "builtins": {"dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "str", "bytes", "bool"},
    "collections": {"OrderedDict", "defaultdict"},
    "numpy": {"dtype"},
    "numpy.core.multiarray": {"scalar"},
    "numpy._core.multiarray": {"scalar"},
}
SAFE_GLOBALS["__builtin__"] = SAFE_GLOBALS["builtins"]  # Python 2 pickles (fix_imports maps them)


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global outside :data:`SAFE_GLOBALS`: reading on could run its code."""

    def __init__(self, module: str, name: str):
        super().__init__(f"{module}.{name}")
        self.qualified = f"{module}.{name}"


class TraceUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only :data:`SAFE_GLOBALS`.  A pickle runs whatever callable it
    names when it is read (``__reduce__`` -> ``os.system``, ...), so a plain ``pickle.load`` of a file
    from the internet executes its author's code; this one refuses before calling anything."""

    def find_class(self, module: str, name: str) -> Any:
        if name not in SAFE_GLOBALS.get(module, ()):
            raise RefusedGlobal(module, name)
        return super().find_class(module, name)


def load_pickle(path: Path, what: str) -> dict:
    try:
        with open(path, "rb") as handle:
            data = TraceUnpickler(handle).load()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file: {exc.strerror}.") from None
    except RefusedGlobal as exc:
        allowed = "; ".join(f"{m}: {', '.join(sorted(n))}" for m, n in SAFE_GLOBALS.items() if m != "__builtin__")
        raise ConfigError(
            f"{path}: refused to unpickle the global {exc.qualified}: reading a pickle can run code, so only "
            f"plain data is accepted (allowed globals: {allowed}); expected {what}.  Nothing was executed."
        ) from None
    except Exception as exc:  # noqa: BLE001 - any unpickling problem means "not this format"
        raise ConfigError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc}); expected {what}.") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a non-empty dict {what}, found {type(data).__name__}.")
    return data
