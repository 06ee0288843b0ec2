"""What a K-async Flower run's checkpoint holds beyond a native run's (:mod:`asyncfl.flower.k_async`), as tensors and
plain values only (checkpoint.pt loads with ``weights_only``: reading one runs no code, :mod:`asyncfl.runner.
checkpoint`).

- **The nodes' Contexts**: each node's ``Context.state`` is a ``RecordDict``, Flower's own serialisable records; it
  is saved as the bytes of Flower's own protobuf serialisation (``flwr.common.serde.recorddict_to_proto``) in a
  uint8 tensor and read back with ``recorddict_from_proto``.  The rest of a Context (run id, node id, node and run
  config) follows from the scenario.
- **The work every task did** (:class:`PerformedWork`): a Flower task is timed by its ClientApp's reply
  (:class:`~asyncfl.sim.clients.DoneWork`), so the clock world depends on the replies.  A resumed run replays the
  clock world from t = 0; each task that started before the checkpoint is told the work it did then, and its
  ClientApp is not called again (its update, if still needed, is in the checkpoint's job book).
- **The global random generators** the ClientApp draws from (Python's ``random``, numpy's, torch's CPU one:
  :func:`asyncfl.flower.generators.apps_seeded`): a replay calls no ClientApp, so they are restored, not replayed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import torch
from flwr.app import Context, RecordDict
from flwr.common.serde import recorddict_from_proto, recorddict_to_proto
from flwr.proto.recorddict_pb2 import RecordDict as ProtoRecordDict

from asyncfl.sim.clients import DoneWork, TaskPlan

NO_TRAIN_SAMPLES = -1  # DoneWork.train_samples None, in the int64 table of PerformedWork


def contexts_state(contexts: Sequence[Context]) -> list[torch.Tensor]:
    """Every node's ``Context.state``, as the bytes of Flower's serialisation (one uint8 tensor a node)."""
    blobs = [recorddict_to_proto(context.state).SerializeToString() for context in contexts]
    return [
        torch.frombuffer(bytearray(blob), dtype=torch.uint8) if blob else torch.zeros(0, dtype=torch.uint8)
        for blob in blobs
    ]


def restore_contexts(contexts: Sequence[Context], saved: Sequence[torch.Tensor]) -> None:
    """Put the saved states back into ``contexts`` (:func:`contexts_state`'s inverse)."""
    for context, blob in zip(contexts, saved, strict=True):
        proto = ProtoRecordDict()
        proto.ParseFromString(blob.numpy().tobytes())
        context.state = recorddict_from_proto(proto) if blob.numel() else RecordDict()


def generators_state() -> dict:
    """The global generators' states (numpy's key as an int64 tensor: an ndarray would not load ``weights_only``)."""
    numpy_state = np.random.get_state(legacy=False)
    inner = numpy_state["state"]
    return {
        "random": random.getstate(),
        "numpy": {
            "bit_generator": numpy_state["bit_generator"],
            "key": torch.from_numpy(inner["key"].astype(np.int64)),
            "pos": int(inner["pos"]),
            "has_gauss": int(numpy_state["has_gauss"]),
            "gauss": float(numpy_state["gauss"]),
        },
        "torch": torch.get_rng_state(),
    }


def restore_generators(saved: dict) -> None:
    random.setstate(saved["random"])
    numpy_state = saved["numpy"]
    np.random.set_state(
        {
            "bit_generator": numpy_state["bit_generator"],
            "state": {"key": numpy_state["key"].numpy().astype(np.uint32), "pos": numpy_state["pos"]},
            "has_gauss": numpy_state["has_gauss"],
            "gauss": numpy_state["gauss"],
        }
    )
    torch.set_rng_state(saved["torch"])


class PerformedWork:
    """The :class:`~asyncfl.sim.clients.DoneWork` of every task whose ClientApp ran, by (client, attempt): saved
    in a checkpoint as one int64 table (client, attempt, samples, download bytes, upload bytes, train samples) and
    the error reasons, and told again to the same tasks when a resumed run replays the clock world."""

    def __init__(self) -> None:
        self.done: dict[tuple[int, int], DoneWork] = {}

    def __len__(self) -> int:
        return len(self.done)

    def note(self, plan: TaskPlan, work: DoneWork) -> DoneWork:
        self.done[(plan.client, plan.attempt)] = work
        return work

    def replayed(self, plan: TaskPlan) -> DoneWork | None:
        """What the task did before the checkpoint (None: it starts after it, its ClientApp is to be called)."""
        return self.done.get((plan.client, plan.attempt))

    def state(self) -> dict:
        rows = [
            (*key, w.samples, w.download_bytes, w.upload_bytes, _or(w.train_samples)) for key, w in self.done.items()
        ]
        errors = {key: w.error for key, w in self.done.items() if w.error is not None}
        return {"table": torch.tensor(rows, dtype=torch.int64).reshape(-1, 6), "errors": errors}

    @classmethod
    def from_state(cls, saved: dict) -> PerformedWork:
        performed = cls()
        for client, attempt, samples, down, up, train in saved["table"].tolist():
            key = (client, attempt)
            train_samples = None if train == NO_TRAIN_SAMPLES else train
            performed.done[key] = DoneWork(samples, down, up, saved["errors"].get(key), train_samples)
        return performed


def _or(train_samples: int | None) -> int:
    return NO_TRAIN_SAMPLES if train_samples is None else train_samples
