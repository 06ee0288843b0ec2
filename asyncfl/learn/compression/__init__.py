"""Update compression (``training.compression``): what a client uploads instead of its full update.

One module per ``kind`` (``none``, ``qsgd``, ``topk``): its section, its function and the size of
what it sends, registered as ``COMPRESSOR`` (see :mod:`asyncfl.registry`).  The learning world
compresses every delivered update before the strategy sees it (:class:`CompressedUploads`, used by
:class:`asyncfl.runner.learning.Learner`), so every algorithm aggregates what was really sent and accuracy
pays for it; the timing world charges the upload (time and energy) for :func:`upload_bytes`, the
real compressed size computed from the parameter count.  Downloads stay the full model.

The ``training.compression`` union is fixed when this package is imported: a compressor registered
later is in :data:`REGISTRY` but not in the schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Field

from asyncfl.learn.compression._base import Compressor
from asyncfl.learn.compression.none import NoCompression
from asyncfl.registry import Registry, discover
from asyncfl.seeding import LazyStream

REGISTRY: Registry = discover(__name__, __path__, "COMPRESSOR", entry_type=Compressor, axis="training.compression.kind")

Compression = Annotated[Union[tuple(c.section for c in REGISTRY.values())], Field(discriminator="kind")]  # type: ignore[misc]


def upload_bytes(spec: Any, n: int) -> int:
    """Bytes of one upload of ``n`` float32 parameters compressed by ``spec`` (no torch)."""
    return REGISTRY[spec.kind].upload_bytes(spec, n)


class CompressedUploads:
    """The learning world's side of ``training.compression``: compresses each update and, with
    ``error_feedback``, keeps each client's residual e_i across its tasks.

    A client sends C(delta + e_i) and keeps e_i <- (delta + e_i) - C(delta + e_i), so over its tasks
    the updates sent plus its residual add up to the updates it computed, exactly (up to float32
    rounding of the sums).  A client whose task fails keeps its residual for its next delivered task;
    one that never delivers again keeps it for good.  :meth:`compress` does not change the kept
    residuals: the run loop collects a round's updates before it aggregates them, and an interrupt
    in between must leave the last round's state intact, so the new residuals are handed back and
    :meth:`commit` keeps them when the round is aggregated.
    """

    def __init__(self, spec: Any, seed: int) -> None:
        self.spec, self.seed = spec, seed
        self.entry = REGISTRY[spec.kind]
        self.feedback = bool(getattr(spec, "error_feedback", False))
        self.residuals: dict[int, Any] = {}  # client -> e_i (clients with error feedback that delivered)

    @property
    def active(self) -> bool:
        return self.spec.kind != "none"

    def compress(self, client: int, attempt: int, delta: Any, pending: dict[int, Any]) -> Any:
        """What client ``client`` sends for its task ``attempt`` computing ``delta``; its new residual
        goes into ``pending`` (which a second update of the same client in one round reads first)."""
        residual = pending.get(client, self.residuals.get(client)) if self.feedback else None
        corrected = delta if residual is None else delta + residual
        sent = self.entry.compress(corrected, self.spec, LazyStream(self.seed, "compression", client, attempt))
        if self.feedback:
            pending[client] = corrected - sent
        return sent

    def commit(self, pending: dict[int, Any]) -> None:
        self.residuals.update(pending)

    def state(self) -> dict:
        return {"residuals": dict(self.residuals)}

    def restore(self, state: dict) -> None:
        self.residuals = dict(state["residuals"])


__all__ = ["REGISTRY", "Compression", "CompressedUploads", "Compressor", "NoCompression", "upload_bytes"]
