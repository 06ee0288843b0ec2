"""Fields every algorithm section shares."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from asyncfl.config.base import Section


class MemoryStore(Section):
    """Where algorithms that remember every client's last update (MIFA, FedAR, FedVARP, FL-FDMS) keep
    it: one preallocated [clients x parameters] matrix."""

    device: Literal["model", "cpu"] = Field(default="model", description="model: same device as the model")
    dtype: Literal["float32", "float16", "bfloat16"] = Field(
        default="float32", description="half precision halves the memory of large models"
    )


class AlgorithmParams(Section):
    """Common keys of the ``algorithm`` section; each algorithm adds its own."""

    record_weights: bool = Field(default=False, description="write weights.csv (per-client aggregation weights)")
    server_lr: float = Field(default=1.0, gt=0, description="global learning rate eta_g")
    memory: MemoryStore = MemoryStore()
