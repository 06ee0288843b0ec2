"""What a data-set module registers (see :mod:`asyncfl.learn.datasets`), and the arrays it loads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# what a sample is: a 1-D signal (or feature vector), a [C, H, W] image, or text (character indices, uint8)
Inputs = Literal["signals", "images", "text"]


@dataclass(frozen=True, eq=False)
class RawData:
    """A data set before it is placed on the device.

    ``x_*`` are float32 of shape ``[n, *input_shape]``, ``y_*`` int64 labels in
    ``[0, num_classes)``.  ``client_of_train`` / ``client_of_test`` give the natural client of each
    sample (``synthetic`` only, else None).  ``source_order``: the position in the data set's source (its
    files' order) of each sample of train-then-test; None when train-then-test is that order (what a
    ``file`` partition with a test list indexes).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    client_of_train: np.ndarray | None = None
    client_of_test: np.ndarray | None = None
    source_order: np.ndarray | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.x_train.shape[1:])


@dataclass(frozen=True)
class DataSet:
    """A ``data.dataset`` value: what the schema and timing-only runs need to know without loading it.

    * ``load(data, seed)``: the arrays, from the ``data`` section and the scenario seed; raises
      :class:`~asyncfl.errors.ConfigError` when they cannot be had.
    * ``input_shape`` / ``classes``: fixed, or computed from the data set's own section
      (``params``, the YAML's ``data.<name>:``) -- a function of that section.
    * ``inputs``: ``signals`` (1-D, what cnn1d convolves over), ``images`` or ``text``.
    * ``natural``: its clients are its own (LEAF's roles), so ``data.partition.kind`` must be ``natural``
      (its default); False: any partition kind.
    * ``order``: place among the allowed values (messages, reference); new data sets sort last by name.

    What ``validate`` asks of it, so that a scenario that cannot load fails there, not in its run:

    * ``train_pool``: samples in the training pool that ``data.partition`` deals to the clients, fixed or
      a function of the data set's own section; None when every client brings samples of its own.
    * ``test_split``: samples in its own test split, likewise (None: not known without loading); with
      ``train_pool`` it bounds the indices of a ``file`` partition with a test list (:meth:`samples`).
    * ``check(data)``: raises :class:`~asyncfl.errors.ConfigError` for a problem with the ``data`` section
      that loading would hit.
    * ``check_files(data)``: raises ConfigError for a problem with its files under ``data.data_dir``
      (missing, with ``data.download`` off); it looks at the disk but loads and downloads nothing.

    What the training-work estimate (:mod:`asyncfl.config.training_work`) asks of it:

    * ``client_sizes(data)``: each client's training samples, in client order, without building the arrays
      (natural clients, whose sizes are the data's own); None when they cannot be had (its files are
      missing: ``check_files`` says so).  Unset: the estimate takes every client at the mean size.
    """

    name: str
    load: Callable[[Any, int], RawData]
    input_shape: tuple[int, ...] | Callable[[Any], tuple[int, ...]]
    classes: int | Callable[[Any], int]
    inputs: Inputs = "images"
    params: type | None = None
    order: int = 1000
    train_pool: int | Callable[[Any], int] | None = None
    test_split: int | Callable[[Any], int] | None = None
    check: Callable[[Any], None] | None = None
    check_files: Callable[[Any], None] | None = None
    natural: bool = False
    client_sizes: Callable[[Any], Sequence[int] | None] | None = None

    def shape_and_classes(self, data: Any) -> tuple[tuple[int, ...], int]:
        """(input shape, number of classes) for the ``data`` section, without loading anything."""
        params = getattr(data, self.name) if self.params is not None else None
        shape = self.input_shape(params) if callable(self.input_shape) else self.input_shape
        classes = self.classes(params) if callable(self.classes) else self.classes
        return tuple(shape), int(classes)

    def pool_size(self, data: Any) -> int | None:
        """Samples in the training pool for the ``data`` section, without loading (None: per-client data)."""
        params = getattr(data, self.name) if self.params is not None else None
        return self.train_pool(params) if callable(self.train_pool) else self.train_pool

    def samples(self, data: Any) -> int | None:
        """Training and test samples together for the ``data`` section, without loading (None: not known)."""
        params = getattr(data, self.name) if self.params is not None else None
        pool = self.pool_size(data)
        test = self.test_split(params) if callable(self.test_split) else self.test_split
        return None if pool is None or test is None else pool + test
