"""Hyperparameters of the synchronous-round algorithms (DESIGN.md section 5).

Defaults follow the papers in ../shared/papers; where a paper gives none the choice is documented
on the field.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from asyncfl.config.algorithm_base import AlgorithmParams


class FedAvgParams(AlgorithmParams):
    """FedAvg: w <- w + eta_g * mean of the received deltas."""

    name: Literal["fedavg"]
    weighting: Literal["uniform", "samples"] = Field(
        default="uniform", description="average uniformly or weighted by client sample counts"
    )


SYNC_ALGORITHMS: tuple[type[AlgorithmParams], ...] = (FedAvgParams,)
