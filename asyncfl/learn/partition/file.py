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
A list names a sample at most once, and a ``test`` list at least one.
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


# past every data set's last sample: the bound when the data set's size is not known without loading it
NO_SIZE = 2**63 - 1


def read_partition_file(path: str, pool: int | None = None, samples: int | None = None) -> PartitionFile:
    """The file at ``path``, its indices checked (the one check ``validate`` and a run make): every client holds
    samples, none twice, each within the data set -- its training pool of ``pool`` samples without a test list,
    all its ``samples`` with one (None: not known, only a sample index at all) -- and a test list is not empty
    and shares no sample with a client.  ConfigError naming ``data.partition.path`` and the file otherwise."""
    where = f"data.partition.path {path}"
    named, test = _clients_and_test(_parsed(Path(path), where), where)
    if not named:
        raise ConfigError(f"{where}: lists no clients; expected {SHAPES}.")
    lists = [(f"client {name!r}", _integer_list(value, f"{where}: client {name!r}")) for name, value in named]
    if test is not None:
        lists.append(("test", _integer_list(test, f"{where}: test")))
    size = _size(pool, samples, with_test=test is not None)
    arrays = [_checked_indices(values, f"{where}: {label}", size, label == "test") for label, values in lists]
    clients = arrays[: len(named)]
    test_indices = arrays[len(named)] if test is not None else None
    if test_indices is not None:
        _check_apart(named, clients, test_indices, where)
    return PartitionFile([name for name, _ in named], clients, test_indices)


def _parsed(file: Path, where: str) -> Any:
    if not file.is_file():
        raise ConfigError(f"{where}: file not found{' (it is a directory)' if file.is_dir() else ''}.")
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not a text file (expected UTF-8 JSON).") from None


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


def _integer_list(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise ConfigError(f"{where}: expected a list of integer sample indices; expected {SHAPES}.")
    return value


def _size(pool: int | None, samples: int | None, with_test: bool) -> tuple[int, str, str]:
    """(how many samples the indices count, what an index past them is, a hint) for a file with or without a
    test list; an unknown size (None) bounds an index by int64 alone."""
    count = samples if with_test else pool
    if count is None:
        return NO_SIZE, "not a sample index", ""
    if with_test:
        return count, f"but the data set has {count} samples (training and test together)", ""
    hint = ' (a file with a "test" list indexes all samples instead)'
    return count, f"outside the data set's training pool of {count} samples", hint


def _checked_indices(values: list[int], where: str, size: tuple[int, str, str], is_test: bool) -> np.ndarray:
    """``values`` as an int64 array, refused when empty, outside ``0..size - 1`` (checked on the Python ints:
    2**70 does not fit int64) or listing a sample twice."""
    count, past, hint = size
    if not values and is_test:
        raise ConfigError(
            f"{where} lists no samples: the test list is the global test set, and without one no accuracy is "
            'ever measured; list at least one sample, or leave "test" out to test on the data set\'s own split'
        )
    if not values:
        raise ConfigError(f"{where} holds no samples; every client needs at least one.")
    bad = next((i for i in values if not 0 <= i < count), None)
    if bad is not None:
        raise ConfigError(f"{where} lists sample {bad}, {past}: allowed 0 to {count - 1}{hint}")
    ordered = np.sort(np.asarray(values, dtype=np.int64))
    twice = ordered[1:][ordered[1:] == ordered[:-1]]
    if len(twice):
        raise ConfigError(f"{where} lists sample {int(twice[0])} twice; each sample may appear once in a list")
    return np.asarray(values, dtype=np.int64)


def _check_apart(named: list[tuple[str, Any]], clients: list[np.ndarray], test: np.ndarray, where: str) -> None:
    for (name, _), indices in zip(named, clients):
        shared = indices[np.isin(indices, test)]
        if len(shared):
            raise ConfigError(f"{where}: sample {int(shared[0])} is both in client {name!r} and in the test list")


def check(spec: FilePartition, clients: int, classes: int) -> None:
    """The file reads (its reader raises) and lists as many clients as ``data.clients`` (``validate`` asks
    before loading)."""
    content = read_partition_file(spec.path)
    if len(content.clients) != clients:
        raise ConfigError(
            f"data.partition.path {spec.path} lists {len(content.clients)} clients but data.clients is {clients}: "
            f"set data.clients: {len(content.clients)}"
        )


def check_samples(spec: FilePartition, pool: int, samples: int | None) -> None:
    """Every index within the data set's sizes (``validate`` asks with the registered ones, before loading)."""
    read_partition_file(spec.path, pool, samples)


def regroup(raw: Any, spec: FilePartition) -> Any:
    """The data set ``raw`` (a RawData: the data sets import this package, so it is not imported here) as
    the file splits it: unchanged without a ``test`` list; else the file's test samples
    as the test set and every other sample (in source order) as the training pool."""
    content = read_partition_file(spec.path, len(raw.y_train), len(raw.y_train) + len(raw.y_test))
    if content.test is None:
        return raw
    x = np.concatenate([raw.x_train, raw.x_test])
    y = np.concatenate([raw.y_train, raw.y_test])
    if raw.source_order is not None:  # rows back into the source order the file's indices use
        x[raw.source_order], y[raw.source_order] = x.copy(), y.copy()
    test = np.sort(content.test)
    pool = np.ones(len(y), dtype=bool)
    pool[test] = False
    return dataclasses.replace(raw, x_train=x[pool], y_train=y[pool], x_test=x[test], y_test=y[test], source_order=None)


def split(labels: np.ndarray, n: int, spec: FilePartition, rng: np.random.Generator) -> list[np.ndarray]:
    """The file's clients, as indices into ``labels`` (the pool :func:`regroup` left, which checked a file with a
    test list against all the samples)."""
    content = read_partition_file(spec.path, len(labels))
    if len(content.clients) != n:
        raise ConfigError(
            f"data.partition.path {spec.path} lists {len(content.clients)} clients but data.clients is {n}: "
            f"set data.clients: {len(content.clients)}"
        )
    if content.test is not None:  # source index -> pool position: less the test samples before it
        test = np.sort(content.test)
        return [indices - np.searchsorted(test, indices) for indices in content.clients]
    return list(content.clients)


PARTITIONER = Partitioner(
    FilePartition, split, order=60, nests=False, check=check, regroup=regroup, check_samples=check_samples
)
