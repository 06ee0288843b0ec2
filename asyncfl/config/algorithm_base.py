"""What every algorithm's parameter section shares.

An algorithm's section lives in its own module of :mod:`asyncfl.algorithms` next to its strategy and
states there, once, the server modes it runs under (``modes``) and any rule it imposes on the rest of the
scenario (``check``); the schema's ``algorithm`` union, the mode checks and the per-mode lists of
algorithm names are built from these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from asyncfl.config.base import Section

if TYPE_CHECKING:
    from asyncfl.config.schema import Scenario


class MemoryStore(Section):
    """Where algorithms that remember every client's last update (MIFA, FedAR, FedVARP, FL-FDMS) keep
    it: one preallocated [clients x parameters] matrix."""

    device: Literal["model", "cpu"] = Field(default="model", description="model: same device as the model")
    dtype: Literal["float32", "float16", "bfloat16"] = Field(
        default="float32", description="half precision halves the memory of large models"
    )


class AlgorithmParams(Section):
    """Common keys of the ``algorithm`` section; each algorithm adds its own and a ``name: Literal[...]``."""

    modes: ClassVar[frozenset[str]] = frozenset()  # the server.mode values it runs under
    order: ClassVar[int] = 1000  # position in the reference and in error messages (then by name)
    # what the contract checks (asyncfl.testing) must know of it: server_k (the server.k it requires),
    # keeps_memory, uses_like_values (see asyncfl/testing/algorithm.py TAGS)
    tags: ClassVar[dict] = {}

    record_weights: bool = Field(default=False, description="write weights.csv (per-client aggregation weights)")
    server_lr: float = Field(default=1.0, gt=0, description="global learning rate eta_g")
    memory: MemoryStore = MemoryStore()

    def check(self, scenario: Scenario) -> None:
        """Raise ValueError (naming the YAML keys) if the rest of ``scenario`` does not suit this algorithm."""


def algorithm_name(params: type[AlgorithmParams]) -> str:
    """The value of the ``name`` tag of an algorithm's section."""
    return params.model_fields["name"].annotation.__args__[0]  # type: ignore[union-attr]
