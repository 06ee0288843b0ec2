"""The part FedAdagrad, FedAdam and FedYogi share (Reddi et al., ICLR 2021, Algorithm 2).

    Delta_t = x_new - x_t                                   (the pseudo-gradient; the paper's mean of
                                                             the client deltas for FedAvg, eta_g = 1)
    m_t     = beta1 m_{t-1} + (1 - beta1) Delta_t           (m_{-1} = 0)
    v_t     = the kind's second-moment rule                 (v_{-1} = tau^2)
    x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)             (element-wise)

Algorithm 2 states the initialisation as "v_{-1} >= tau^2"; we take the equality.  The paper indexes the
first round t = 0, so its v_{-1} is the brief's "v_0": the value before the first update.  There is no
bias correction (the paper's Algorithm 2 has none, unlike Kingma & Ba's Adam).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import Field

from asyncfl.algorithms.server_optimizers._base import keep, working
from asyncfl.lazy import torch
from asyncfl.sections import Section


class AdaptiveKeys(Section):
    """The keys of every adaptive kind (each adds its ``kind``; Adam and Yogi add ``beta2``)."""

    lr: float = Field(gt=0, description="server learning rate eta (x <- x + eta m / (sqrt(v) + tau)); no default")
    beta1: float = Field(default=0.9, ge=0, lt=1, description="first-moment decay beta1, in [0, 1)")
    tau: float = Field(default=1e-3, gt=0, description="adaptivity tau > 0 (also v's start, tau^2)")


class DecayingSecondMomentKeys(AdaptiveKeys):
    """Adam's and Yogi's: v decays with beta2."""

    beta2: float = Field(default=0.99, ge=0, lt=1, description="second-moment decay beta2, in [0, 1)")


class AdaptiveServerOptimizer(ABC):
    """m, v and the step; each kind gives its ``second_moment(v, delta_sq)`` (in place)."""

    def __init__(self, spec: Any, like: torch.Tensor) -> None:
        self.spec = spec
        self.m = torch.zeros_like(like)
        self.v = torch.full_like(like, spec.tau**2)

    @abstractmethod
    def second_moment(self, v: torch.Tensor, delta_sq: torch.Tensor) -> None:
        """v_t from v_{t-1} and Delta_t^2, in place: Adagrad, Adam and Yogi differ only here."""

    def step(self, current: torch.Tensor, proposed: torch.Tensor) -> torch.Tensor:
        s = self.spec
        delta = proposed - current
        m, v = working(self.m, current), working(self.v, current)
        m.mul_(s.beta1).add_(delta, alpha=1.0 - s.beta1)
        self.second_moment(v, delta * delta)
        keep(self.m, m)
        keep(self.v, v)
        return current + s.lr * m / (v.sqrt() + s.tau)

    def state_dict(self) -> dict[str, Any]:
        return {"m": self.m.clone(), "v": self.v.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if set(state) != {"m", "v"}:
            raise ValueError(f"{type(self).__name__}: expected state keys m, v, got {sorted(state)}")
        self.m = state["m"].to(self.m.device, self.m.dtype, copy=True)
        self.v = state["v"].to(self.v.device, self.v.dtype, copy=True)
