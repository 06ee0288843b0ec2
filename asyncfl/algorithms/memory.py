"""One preallocated store for per-client vectors (docs/explanation/architecture.md section 7).

MIFA, FedAR and FedVARP remember the latest update of every client: N x d numbers.  Keeping
them in one matrix (rather than N separate tensors) makes the memory predictable, lets means over
clients be one reduction, and allows a CPU-resident or half-precision store for large models.
Reads come back in the compute dtype and device of the caller.  The same ``algorithm.memory`` places
FedAsync's past models and the server optimizer's moment buffers (:func:`stored_like`).
"""

from __future__ import annotations

from collections.abc import Sequence

from asyncfl.algorithms.base import MemoryStore
from asyncfl.lazy import torch

CHUNK_NUMBERS = 1 << 20  # rows are summed in chunks of about this many numbers (4 MiB in float32)


def store_dtype(name: str) -> torch.dtype:
    """The torch dtype of ``memory.dtype`` (float32, float16, bfloat16: torch's own names)."""
    return getattr(torch, name)


def store_device(like: torch.Tensor, spec: MemoryStore) -> torch.device:
    """The device of ``memory.device``: the model's (``like``'s) or the CPU."""
    return like.device if spec.device == "model" else torch.device("cpu")


def stored_like(like: torch.Tensor, spec: MemoryStore) -> torch.Tensor:
    """An uninitialised tensor of ``like``'s shape on the store's device and dtype: the ``like`` that
    buffers kept as ``spec`` says are built from (the server optimizer's m and v)."""
    return torch.empty(like.shape, dtype=store_dtype(spec.dtype), device=store_device(like, spec))


class UpdateStore:
    def __init__(self, num_clients: int, dim: int, like: torch.Tensor, spec: MemoryStore = MemoryStore()) -> None:
        device = store_device(like, spec)
        self.compute_dtype, self.compute_device = like.dtype, like.device
        self.rows = torch.zeros(num_clients, dim, dtype=store_dtype(spec.dtype), device=device)
        self.filled = torch.zeros(num_clients, dtype=torch.bool)

    def __contains__(self, client: int) -> bool:
        return bool(self.filled[client])

    def put(self, client: int, vector: torch.Tensor) -> None:
        self.rows[client].copy_(vector)
        self.filled[client] = True

    def get(self, client: int) -> torch.Tensor:
        return self.rows[client].to(self.compute_device, self.compute_dtype)

    def clients(self) -> list[int]:
        return self.filled.nonzero().flatten().tolist()

    def sum(self, clients: Sequence[int] | None = None, weights: Sequence[float] | None = None) -> torch.Tensor:
        """sum_i w_i * row_i over ``clients`` (default: every filled row, unit weights)."""
        clients = self.clients() if clients is None else list(clients)
        w = torch.ones(len(clients)) if weights is None else torch.tensor(list(weights), dtype=torch.float64)
        total = torch.zeros(self.rows.shape[1], dtype=self.compute_dtype, device=self.compute_device)
        # Chunks of rows keep the temporary copy small: the peak stays near the store's own size.
        step = max(1, CHUNK_NUMBERS // max(1, self.rows.shape[1]))
        for start in range(0, len(clients), step):
            index = torch.tensor(clients[start : start + step], device=self.rows.device)
            rows = self.rows.index_select(0, index).to(self.compute_device, self.compute_dtype)
            total += w[start : start + step].to(rows) @ rows
        return total

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The stored rows and which are filled (the live tensors: save them before the next put)."""
        return {"rows": self.rows, "filled": self.filled}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Copy a saved store into this one (same shape; kept on this store's device and dtype)."""
        self.rows.copy_(state["rows"])
        self.filled.copy_(state["filled"])

    def nbytes(self) -> int:
        return self.rows.numel() * self.rows.element_size()
