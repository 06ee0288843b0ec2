"""``avgm``: FedAvgM, server momentum (Hsu, Qi & Brown, 2019, "Measuring the effects of non-identical data
distribution for federated visual classification", Sec. 3; Reddi et al., ICLR 2021, Algorithm 1 with
ServerOpt = SGD with momentum).

    Delta_t = x_new - x_t                    (pseudo-gradient, ascent sign: what the algorithm proposed)
    m_t     = beta m_{t-1} + Delta_t         (m_{-1} = 0)
    x_{t+1} = x_t + eta m_t

Momentum convention: heavy ball without dampening, as Hsu et al. write it (``v <- beta v + Delta w;
w <- w - v``, their Delta w having the descent sign, hence our ``+``) and as torch.optim.SGD does; the
step of a constant Delta tends to eta Delta / (1 - beta) (Hsu et al.'s "effective learning rate").
beta = 0 and eta = 1 give back the algorithm's own step.  FedBuff's server momentum (Nguyen et al.,
AISTATS 2022) is this optimizer applied to the buffered aggregate (``algorithm.name: fedbuff`` with
``server_optimizer: {kind: avgm}``).  The key is ``beta1`` as for the adaptive kinds, so a study can
switch kinds without renaming it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from asyncfl.algorithms.server_optimizers._base import ServerOptimizerKind, keep, working
from asyncfl.lazy import torch
from asyncfl.sections import Section


class AvgMServerOptimizer(Section):
    """FedAvgM (Hsu et al. 2019): m <- beta1 m + Delta, x <- x + lr m (heavy ball, no dampening)."""

    kind: Literal["avgm"]
    lr: float = Field(default=1.0, gt=0, description="server learning rate eta (x <- x + eta m)")
    beta1: float = Field(default=0.9, ge=0, lt=1, description="momentum beta (m <- beta m + Delta), in [0, 1)")


class AvgM:
    def __init__(self, spec: AvgMServerOptimizer, like: torch.Tensor) -> None:
        self.spec = spec
        self.m = torch.zeros_like(like)

    def step(self, current: torch.Tensor, proposed: torch.Tensor) -> torch.Tensor:
        m = working(self.m, current).mul_(self.spec.beta1).add_(proposed - current)
        keep(self.m, m)
        return current + self.spec.lr * m

    def state_dict(self) -> dict[str, Any]:
        return {"m": self.m.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if set(state) != {"m"}:
            raise ValueError(f"avgm: expected state key m, got {sorted(state)}")
        self.m = state["m"].to(self.m.device, self.m.dtype, copy=True)


OPTIMIZER = ServerOptimizerKind(
    AvgMServerOptimizer, AvgM, examples=({}, {"lr": 0.5, "beta1": 0.0}, {"lr": 1.0, "beta1": 0.99}), order=1
)
