"""``file``: a partition read from a JSON file (client -> sample indices), as FLGo writes it, so that
asyncfl trains and tests on exactly the samples another simulator used.

Accepted shapes (the first of them that fits):

* ``{"clients": [[i, ...], ...] or {"name": [i, ...], ...}, "test": [i, ...]}`` (``test`` optional;
  other keys such as ``description`` are ignored);
* FLGo's ``data.json``: ``{"client_names": [...], "<name>": {"data": [i, ...]}, ...}``;
* a bare map ``{"<client>": [i, ...], ...}`` or a list of lists.

Clients are taken in the file's order (client 0 is the first).  Without ``test`` the indices point
into the data set's training pool, the pool every other partition deals, and its own test set stays.
With ``test`` the file brings its own split: indices point into all of the data set's samples in
their source order (its training files, then its test files; digits: scikit-learn's ``load_digits``
order), the ``test`` samples become the global test set, and the clients draw from the others.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.learn.partition._base import Partitioner
from asyncfl.sections import Section

SHAPES = (
    '{"clients": [[indices], ...], "test": [indices]}, FLGo\'s data.json '
    '({"client_names": [...], "<name>": {"data": [indices]}}), or {"<client>": [indices], ...}'
)


class FilePartition(Section):
    """Clients' samples listed in a JSON file (FLGo's form); with a ``test`` list, also the global test set."""

    kind: Literal["file"]
    path: str = Field(
        min_length=1,
        description="JSON file mapping each client to its sample indices (relative to the scenario file)",
    )


@dataclass(frozen=True)
class PartitionFile:
    """A partition file's clients (index arrays, in file order, with their names) and its test list."""

    names: list[str]
    clients: list[np.ndarray]
    test: np.ndarray | None


def read_partition_file(path: str) -> PartitionFile:
    """The file at ``path``; ConfigError naming ``data.partition.path`` and the file when it is unusable."""
    where = f"data.partition.path {path}"
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{where}: file not found{' (it is a directory)' if file.is_dir() else ''}.")
    try:
        content = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not a text file (expected UTF-8 JSON).") from None
    named, test = _clients_and_test(content, where)
    if not named:
        raise ConfigError(f"{where}: lists no clients; expected {SHAPES}.")
    clients = [_indices(value, f"{where}: client {name!r}") for name, value in named]
    for (name, _), indices in zip(named, clients):
        if len(indices) == 0:
            raise ConfigError(f"{where}: client {name!r} holds no samples; every client needs at least one.")
    test_indices = None if test is None else _indices(test, f"{where}: test")
    return PartitionFile([name for name, _ in named], clients, test_indices)


def _clients_and_test(content: Any, where: str) -> tuple[list[tuple[str, Any]], Any]:
    """((client name, its index list) in file order, the test list or None) of the parsed JSON."""
    if isinstance(content, list):
        return [(str(k), v) for k, v in enumerate(content)], None
    if not isinstance(content, dict):
        raise ConfigError(f"{where}: expected {SHAPES}, got a JSON {type(content).__name__}.")
    test = content.get("test")
    if "clients" in content:
        clients = content["clients"]
        if isinstance(clients, list):
            return [(str(k), v) for k, v in enumerate(clients)], test
        if isinstance(clients, dict):
            return list(clients.items()), test
        raise ConfigError(f'{where}: "clients" must be a list of index lists or a map of them; expected {SHAPES}.')
    if "client_names" in content:  # FLGo's data.json
        missing = [name for name in content["client_names"] if not isinstance(content.get(name), dict)]
        if missing:
            raise ConfigError(f'{where}: client_names lists {missing[0]!r}, which has no {{"data": [...]}} entry.')
        return [(name, content[name].get("data")) for name in content["client_names"]], test
    return [(name, value) for name, value in content.items() if name != "test"], test


def _indices(value: Any, where: str) -> np.ndarray:
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise ConfigError(f"{where}: expected a list of integer sample indices; expected {SHAPES}.")
    return np.asarray(value, dtype=np.int64).reshape(-1)


def _out_of_range(indices: np.ndarray, size: int) -> int | None:
    bad = indices[(indices < 0) | (indices >= size)]
    return int(bad[0]) if len(bad) else None


def check(spec: FilePartition, clients: int, classes: int) -> None:
    """The file reads (its reader raises) and lists as many clients as ``data.clients`` (``validate`` asks
    before loading)."""
    content = read_partition_file(spec.path)
    if len(content.clients) != clients:
        raise ConfigError(
            f"data.partition.path {spec.path} lists {len(content.clients)} clients but data.clients is {clients}: "
            f"set data.clients: {len(content.clients)}"
        )


def regroup(raw: Any, spec: FilePartition) -> Any:
    """The data set ``raw`` (a RawData: the data sets import this package, so it is not imported here) as
    the file splits it: unchanged without a ``test`` list; else the file's test samples
    as the test set and every other sample (in source order) as the training pool."""
    content = read_partition_file(spec.path)
    if content.test is None:
        return raw
    x = np.concatenate([raw.x_train, raw.x_test])
    y = np.concatenate([raw.y_train, raw.y_test])
    if raw.source_order is not None:  # rows back into the source order the file's indices use
        x[raw.source_order], y[raw.source_order] = x.copy(), y.copy()
    where = f"data.partition.path {spec.path}"
    for name, indices in [("test", content.test), *zip(content.names, content.clients)]:
        bad = _out_of_range(indices, len(y))
        if bad is not None:
            raise ConfigError(
                f"{where}: {name if name == 'test' else f'client {name!r}'} lists sample {bad}, but the data set "
                f"has {len(y)} samples (training and test together): allowed 0 to {len(y) - 1}"
            )
    test = np.unique(content.test)
    is_test = np.zeros(len(y), dtype=bool)
    is_test[test] = True
    for name, indices in zip(content.names, content.clients):
        if is_test[indices].any():
            shared = int(indices[is_test[indices]][0])
            raise ConfigError(f"{where}: sample {shared} is both in client {name!r} and in the test list")
    pool = ~is_test
    return dataclasses.replace(raw, x_train=x[pool], y_train=y[pool], x_test=x[test], y_test=y[test], source_order=None)


def split(labels: np.ndarray, n: int, spec: FilePartition, rng: np.random.Generator) -> list[np.ndarray]:
    """The file's clients, as indices into ``labels`` (the pool :func:`regroup` left)."""
    content = read_partition_file(spec.path)
    where = f"data.partition.path {spec.path}"
    if len(content.clients) != n:
        raise ConfigError(
            f"{where} lists {len(content.clients)} clients but data.clients is {n}: "
            f"set data.clients: {len(content.clients)}"
        )
    if content.test is not None:  # source index -> pool position: less the test samples before it
        test = np.unique(content.test)
        return [indices - np.searchsorted(test, indices) for indices in content.clients]
    for name, indices in zip(content.names, content.clients):
        bad = _out_of_range(indices, len(labels))
        if bad is not None:
            raise ConfigError(
                f"{where}: client {name!r} lists sample {bad}, outside the data set's training pool of "
                f'{len(labels)} samples: allowed 0 to {len(labels) - 1} (a file with a "test" list indexes '
                "all samples instead)"
            )
    return list(content.clients)


PARTITIONER = Partitioner(FilePartition, split, order=60, nests=False, check=check, regroup=regroup)
