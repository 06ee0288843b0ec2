"""A Flower model's arrays as the one flat vector asyncfl's strategies aggregate, and back.

asyncfl's strategies work on flat 1-D tensors (docs/explanation/architecture.md section 5); a Flower model
travels as an ``ArrayRecord`` (named numpy arrays).  :class:`FlatArrays` fixes the names, shapes and dtypes of
the global model's arrays once and converts each message's arrays to and from one vector on the run's device:
every array in the record's order, each cast to the vector's floating type (float32, or float64 when an array
is float64).  An integer array (e.g. BatchNorm's ``num_batches_tracked``) travels in the vector as a float
and is rounded back, so asyncfl's strategies aggregate it like the weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from flwr.app import Array, ArrayRecord


class ArraysMismatch(ValueError):
    """A reply's arrays are not the global model's (other names, shapes or count)."""


class FlatArrays:
    """The layout of a model's arrays (names, shapes, dtypes) and the conversions of :mod:`this module <asyncfl.
    flower.flat_arrays>`."""

    def __init__(self, record: ArrayRecord, device: torch.device) -> None:
        self.device = device
        arrays = {name: array.numpy() for name, array in record.items()}
        if not arrays:
            raise ValueError("the model has no arrays")
        self.names = tuple(arrays)
        self.shapes = tuple(a.shape for a in arrays.values())
        self.dtypes = tuple(a.dtype for a in arrays.values())
        self.sizes = tuple(int(a.size) for a in arrays.values())
        wide = any(d == np.float64 for d in self.dtypes)
        self.dtype = torch.float64 if wide else torch.float32
        self.nbytes = sum(int(a.nbytes) for a in arrays.values())  # the arrays' data, as a native model's bytes

    def flatten(self, record: ArrayRecord) -> torch.Tensor:
        """One vector of ``record``'s arrays, on the run's device; :class:`ArraysMismatch` if they are not this
        layout's."""
        if tuple(record.keys()) != self.names:
            raise ArraysMismatch(f"arrays {sorted(record.keys())} instead of the model's {sorted(self.names)}")
        parts = []
        for name, shape in zip(self.names, self.shapes):
            array = record[name].numpy()
            if array.shape != shape:
                raise ArraysMismatch(f"array {name!r} has shape {array.shape}, the model's {shape}")
            parts.append(torch.from_numpy(np.ascontiguousarray(array)).reshape(-1).to(self.dtype))
        return torch.cat(parts).to(self.device)

    def record(self, flat: torch.Tensor) -> ArrayRecord:
        """The ArrayRecord of vector ``flat``: each array in its own shape and dtype (integers rounded)."""
        values = flat.detach().cpu().numpy()
        arrays: dict[str, Array] = {}
        start = 0
        for name, shape, dtype, size in zip(self.names, self.shapes, self.dtypes, self.sizes):
            part = values[start : start + size].reshape(shape)
            if np.issubdtype(dtype, np.integer):
                part = np.rint(part)
            arrays[name] = Array.from_numpy_ndarray(np.ascontiguousarray(part.astype(dtype, copy=False)))
            start += size
        return ArrayRecord(arrays)


def as_array_record(arrays: Any, where: str) -> ArrayRecord:
    """What ``flower.initial_arrays`` returned, as an ArrayRecord: an ArrayRecord, a torch ``state_dict`` (a
    mapping of names to tensors) or a list of numpy arrays (named "0", "1", ... as Flower names them)."""
    if isinstance(arrays, ArrayRecord):
        record = arrays
    elif isinstance(arrays, Mapping) and all(isinstance(v, torch.Tensor) for v in arrays.values()):
        record = ArrayRecord(dict(arrays))  # Flower's from_torch_state_dict
    elif isinstance(arrays, (list, tuple)) and all(isinstance(a, np.ndarray) for a in arrays):
        record = ArrayRecord(list(arrays))
    else:
        raise ValueError(
            f"{where} returned a {type(arrays).__name__}; allowed: a flwr.app.ArrayRecord, a torch state_dict "
            "or a list of numpy arrays"
        )
    if not len(record):
        raise ValueError(f"{where} returned no arrays; allowed: the model's arrays (at least one)")
    return record
