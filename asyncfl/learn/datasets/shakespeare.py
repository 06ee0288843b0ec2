"""``shakespeare``: LEAF's Shakespeare (Caldas et al. 2018), offline: one natural client per speaking role of
each play, next-character prediction from the 80 characters before it.

The roles' texts ship with the package (``data/shakespeare.json.xz``, 1.3 MB, built from Project Gutenberg's
public-domain texts by ``benchmarks/tools/build_shakespeare.py``; provenance and licence are in the file);
its sha256 is checked before it is read, so a damaged file is an error, not a silently different data set.
A role's samples are its text's windows: sample i is characters i..i+79 (as vocabulary indices, uint8) and
its label the character after them; the windows are built at load time from the text (one copy per window).

``data.clients`` roles are drawn without replacement with ``data.shakespeare.role_seed`` (not the run's
seed: every seed of a study gets the same clients), kept in file order (play by play).  Each client's windows
are split in time order, as LEAF's Shakespeare split is described: the first ones train, the last
``round(n * data.test_fraction)`` (at least one, at most ``data.shakespeare.test_cap``) test.  The global
test set is the union of the clients' test splits.  There is no pool to partition:
``data.partition.kind`` is ``natural`` (:mod:`asyncfl.learn.partition.natural`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.learn.datasets._base import DataSet, RawData
from asyncfl.sections import Section

DATA_FILE = Path(__file__).parent / "data" / "shakespeare.json.xz"
DATA_SHA256 = "5fc58d64080ec24926332c7b2568ab2e958e9c8a8ab7f109d53fc45b695842fd"
ROLES = 1165  # (play, role) clients in the file: what data.clients may ask for without loading it
SEQUENCE = 80  # characters a sample sees (LEAF's window)
VOCABULARY = 80  # LEAF's characters; the file lists them


class Shakespeare(Section):
    """LEAF's Shakespeare clients: which roles, and how much of each role's text is held out."""

    role_seed: int = Field(default=0, ge=0, description="seed drawing the data.clients roles (not the run's seed)")
    test_cap: int | None = Field(
        default=None, ge=1, description="at most this many test windows per client, the last ones (null: no cap)"
    )


def load(data: Any, seed: int) -> RawData:
    check(data)
    check_files(data)
    roles = read_roles(DATA_FILE)
    chosen = choose_roles(len(roles), data.clients, data.shakespeare.role_seed)
    train_x, train_y, test_x, test_y = [], [], [], []
    for text in (roles[k] for k in chosen):
        x, y = windows(text)
        n_test = test_count(len(y), data.test_fraction, data.shakespeare.test_cap)
        train_x.append(x[: len(y) - n_test])
        train_y.append(y[: len(y) - n_test])
        test_x.append(x[len(y) - n_test :])
        test_y.append(y[len(y) - n_test :])
    owner = [np.repeat(np.arange(len(chosen)), [len(y) for y in part]) for part in (train_y, test_y)]
    return RawData(
        np.concatenate(train_x), np.concatenate(train_y), np.concatenate(test_x), np.concatenate(test_y),
        VOCABULARY, owner[0], owner[1],
    )  # fmt: skip


def windows(text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A role's samples: every run of ``SEQUENCE`` characters [n, SEQUENCE] (uint8) and the character after
    each [n] (int64), n = len(text) - SEQUENCE."""
    n = len(text) - SEQUENCE
    x = np.lib.stride_tricks.sliding_window_view(text, SEQUENCE)[:n].copy()
    return x, text[SEQUENCE:].astype(np.int64)


def test_count(n: int, test_fraction: float, cap: int | None) -> int:
    """Test windows of a client with ``n``: ``round(n * test_fraction)``, at least 1 and at most ``cap``,
    never all (n >= 2 in the file)."""
    count = max(1, round(n * test_fraction))
    return min(count, n - 1, cap if cap is not None else n)


def choose_roles(roles: int, clients: int, role_seed: int) -> np.ndarray:
    """``clients`` distinct role indices, sorted; all of them when ``clients == roles``."""
    return np.sort(np.random.default_rng(role_seed).choice(roles, size=clients, replace=False))


@functools.lru_cache(maxsize=1)
def read_roles(path: Path) -> tuple[np.ndarray, ...]:
    """Every role's text as vocabulary indices (uint8), in file order; read once per process."""
    content = json.loads(lzma.decompress(path.read_bytes()))
    table = np.zeros(256, dtype=np.uint8)
    codes = np.frombuffer(content["vocabulary"].encode("ascii"), dtype=np.uint8)
    table[codes] = np.arange(len(codes), dtype=np.uint8)
    texts = tuple(table[np.frombuffer(role["text"].encode("ascii"), dtype=np.uint8)] for role in content["roles"])
    for text in texts:
        text.setflags(write=False)  # shared by every run of the process through the cache
    return texts


def role_names(path: Path = DATA_FILE) -> list[tuple[str, str]]:
    """(play, role) of every client in the file, in file order."""
    return [(r["play"], r["role"]) for r in json.loads(lzma.decompress(path.read_bytes()))["roles"]]


def client_sizes(data: Any) -> list[int] | None:
    """Training windows of each of the ``data.clients`` roles, from the lengths of their texts (no window is
    built); None when the data file is missing or damaged, or ``data`` asks for more roles than it has (the
    checks below say so)."""
    try:
        check(data)
        check_files(data)
    except ConfigError:
        return None
    texts = read_roles(DATA_FILE)
    windows_of = [len(texts[k]) - SEQUENCE for k in choose_roles(len(texts), data.clients, data.shakespeare.role_seed)]
    return [n - test_count(n, data.test_fraction, data.shakespeare.test_cap) for n in windows_of]


def check(data: Any) -> None:
    if data.test_fraction <= 0:
        raise ConfigError(
            "data.dataset shakespeare builds its global test set from the clients' local test splits, "
            "so data.test_fraction must be greater than 0 (LEAF holds out 0.1)"
        )
    if data.clients > ROLES:
        raise ConfigError(
            f"data.clients ({data.clients}) is larger than the {ROLES} roles of data.dataset shakespeare; "
            f"allowed: 1 to {ROLES}"
        )


def check_files(data: Any) -> None:
    """The shipped data file, missing or not the one built (its sha256)."""
    if not DATA_FILE.is_file():
        raise ConfigError(f"data.dataset shakespeare: its data file {DATA_FILE} is missing; reinstall asyncfl")
    digest = hashlib.sha256(DATA_FILE.read_bytes()).hexdigest()
    if digest != DATA_SHA256:
        raise ConfigError(
            f"data.dataset shakespeare: its data file {DATA_FILE} is damaged (sha256 {digest[:16]}..., expected "
            f"{DATA_SHA256[:16]}...); reinstall asyncfl or rebuild it with benchmarks/tools/build_shakespeare.py"
        )


DATASET = DataSet(
    "shakespeare",
    load,
    input_shape=(SEQUENCE,),
    classes=VOCABULARY,
    inputs="text",
    params=Shakespeare,
    order=25,
    check=check,  # no train_pool: every client's samples are its own role's
    check_files=check_files,
    natural=True,
    client_sizes=client_sizes,
)
