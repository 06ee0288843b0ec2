"""Reading FedScale's pickles as plain data only (:mod:`asyncfl.safe_pickle`): these files come from the
internet, and a pickle runs whatever callable it names when it is read."""

from __future__ import annotations

from pathlib import Path

from asyncfl.errors import ConfigError
from asyncfl.safe_pickle import PLAIN, load_restricted

# The only globals a trace pickle may name.  FedScale's files hold dicts, lists, ints, floats and strings,
# which name no global at all; PLAIN and these numpy scalars cover other writers of the same data.
SAFE_GLOBALS = {
    **PLAIN,
    "numpy": frozenset({"dtype"}),
    "numpy.core.multiarray": frozenset({"scalar"}),
    "numpy._core.multiarray": frozenset({"scalar"}),
}


def load_pickle(path: Path, what: str) -> dict:
    data = load_restricted(path, SAFE_GLOBALS, what)
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a non-empty dict {what}, found {type(data).__name__}.")
    return data
