"""FedHist (Jiang, Gao, Xu, Zhang, Liao & Zhou, "Knowledge Rumination for Client Utility Evaluation in
Heterogeneous Federated Learning", ../shared/papers/fedhist.txt section II): K-async aggregation with a
server-side buffer of the last h global gradients (G) and local gradients (L).

Local gradients are g_i = -Delta_i / eta_i
(docs/explanation/architecture.md section 5, sign convention).  Round r (``context.version``,
the version being produced) with K buffered updates:

EGS (eqs. 5-7)   g~_i = g_i + alpha * g_co,   g_co = argmin_{g in G} cos(g_i, g)    (G empty: g~_i = g_i)
HAA (eq. 8)      p^_i = s(tau_i) + lambda * U_i,   p_i = p^_i / sum_j p^_j,   s(tau) = (e/2)^-tau
INA (eq. 14)     g = (sum_i p_i g~_i) / ||sum_i p_i g~_i|| * (1/K) sum_i ||g~_i||
update (eq. 4)   w <- w - eta * g,   eta = server_lr * eta_local   (server_lr = 1 and every part off: FedAvg)

Utility (eqs. 9-13), after each round r: S = the buffered local gradients whose base version is r - h
(those "relatively fresh" to round r - h), g_pred = mean(S) (eq. 10); for every local gradient g_his
aggregated in round r - h, with its actual staleness tau:
    Util = (cos(g_his, g_pred) - sim_T) * p_his * |S|                                      (eq. 11)
    p_his = 1 - s(tau) if cos >= sim_T else s(tau)                                          (eq. 12)
    U_i <- (1 - gamma) U_i + gamma * Util                                                   (eq. 13)
so L keeps h + 1 rounds (r - h ... r).  |S| = 0: nothing is evaluated that round.

Choices where the paper is silent or ambiguous (all YAML keys of ``algorithm``):
* Staleness: the paper counts from 1 (tau >= 1, section II-C), ours from 0, so s is taken at
  tau + ``staleness_offset`` (1).  This matters for eq. 12: a fresh gradient gets p_his = 1 - 2/e.
* HAA weights are clamped at 0 before normalising (a penalty lowers a weight, it never flips a
  gradient); if every p^_i is 0 the staleness weights s(tau_i) are used (recorded as ``haa_guard``).
  ``haa: false`` (the ablation) gives uniform weights 1/K and evaluates no utility.
* INA's target norm is the mean norm of the vectors actually aggregated (g~_i, eq. 14 uses the same
  symbols in the numerator and the norm); ``ina: false`` keeps the weighted average as it is.
* G caches the final global gradient g of each round; L the raw local gradients g_i.
* Defaults: h = 5 = N/(2K) for the N/K = 10 setting (the paper's mean-staleness argument, II-C).
  In this simulator the measured mean staleness (the task time in rounds) is ~N/K, and S is often
  empty when h is below it: measure it with ``diagnostics: true`` (fedhist_diagnostics.csv:
  mean_staleness, evaluated_fraction, mean_fresh) and take h >= it (the paper studies use h = N/K).
  alpha = 0.1, so the fused history is a tenth of a gradient (EGS corrects direction without
  dominating it); lambda = 0.1, sim_T = 0.1, gamma = 0.3: a utility is of order
  (cos - sim_T) * |S| ~ 0.3 * 5, so lambda * U ~ 0.1 is a boost of the same order as s(tau) of a
  gradient two rounds stale, and the EMA forgets a single evaluation in ~3 rounds.  The sensitivity
  of each is measured by benchmarks/experiments/fedhist_sensitivity.py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import ClassVar, Literal

from pydantic import Field

from asyncfl.algorithms.base import Aggregate, AlgorithmParams, AlgorithmTags, Context, Update
from asyncfl.algorithms.fedhist_diagnostics import DIAGNOSTICS_FILE, UtilityDiagnostics
from asyncfl.algorithms.staleness import ExponentialStaleness, Staleness, staleness_weight
from asyncfl.lazy import torch
from asyncfl.sections import OPT_IN


class FedHistParams(AlgorithmParams):
    """FedHist (Jiang et al., fedhist.txt section II): EGS + HAA + INA on a buffer of h past rounds.

    The paper gives no values for alpha, lambda, gamma, sim_T and h; the defaults are our choices,
    justified in :mod:`asyncfl.algorithms.fedhist` and measured in docs/figures/fedhist_sensitivity.png.
    """

    name: Literal["fedhist"]
    modes: ClassVar[frozenset[str]] = frozenset({"k_async"})
    order: ClassVar[int] = 9
    tags: ClassVar[AlgorithmTags] = AlgorithmTags(keeps_memory=True)
    history: int = Field(
        default=5, ge=1, description="h, rounds of global/local gradients kept (our choice: N/(2K), paper section II-C)"
    )
    alpha: float = Field(default=0.1, ge=0, description="EGS fusion weight of eq. 7 (our choice; paper: alpha > 0)")
    lam: float = Field(default=0.1, ge=0, description="HAA lambda of eq. 8, weight of the utility (our choice)")
    gamma: float = Field(default=0.3, gt=0, le=1, description="EMA constant of eq. 13 (our choice)")
    sim_t: float = Field(default=0.1, ge=-1, le=1, description="similarity threshold sim_T of eqs. 11-12 (our choice)")
    egs: bool = Field(default=True, description="enhancement of gradient stability (eqs. 5-7); false = ablation")
    haa: bool = Field(default=True, description="history-aware aggregation (eqs. 8-13); false = uniform 1/K (ablation)")
    ina: bool = Field(default=True, description="l2-norm amplification (eq. 14); false = keep the aggregate's norm")
    staleness: Staleness = Field(
        default=ExponentialStaleness(kind="exponential"), description="s(tau) of eqs. 8 and 12: the paper's (e/2)^-tau"
    )
    staleness_offset: int = Field(
        default=1,
        ge=0,
        description="the paper counts staleness from 1 (II-C: tau >= 1), ours from 0: s is taken at tau + offset",
    )
    diagnostics: bool = Field(
        default=False,
        json_schema_extra=OPT_IN,
        description="write fedhist_diagnostics.csv: how often eqs. 9-13 ran (|S| > 0), the mean |S| and the mean "
        "staleness, to check that h fits the measured task time in rounds",
    )


def local_gradients(updates: Sequence[Update]) -> torch.Tensor:
    """[K x d] matrix of g_i = -Delta_i / eta_i."""
    return torch.stack([-u.delta / u.lr for u in updates])


def cosine_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cos(a_i, b_j) for rows of a [K x d] and b [m x d] (eq. 5); a zero vector has cosine 0."""
    an = a / a.norm(dim=1, keepdim=True).clamp_min(1e-30)
    bn = b / b.norm(dim=1, keepdim=True).clamp_min(1e-30)
    return an @ bn.T


TIE_TOLERANCE = 1e-6  # cosines this close count as equal in EGS's argmin


def egs_fuse(grads: torch.Tensor, history: torch.Tensor, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Eqs. 6-7: fuse each row with its least-similar history row.  Returns (g~ [K x d], chosen row [K])."""
    if history.shape[0] == 0:
        return grads.clone(), torch.full((grads.shape[0],), -1, dtype=torch.long, device=grads.device)
    cos = cosine_matrix(grads, history)
    # Ties (within float noise) go to the lowest row, so rounding differences can't flip the choice.
    near_min = cos <= cos.min(dim=1, keepdim=True).values + TIE_TOLERANCE
    chosen = near_min.to(torch.uint8).argmax(dim=1)
    return grads + alpha * history[chosen], chosen


def haa_weights(base: torch.Tensor, utility: torch.Tensor, lam: float) -> tuple[torch.Tensor, bool]:
    """Eq. 8: p_i proportional to max(0, s_i + lam * U_i).  Returns (p, guarded): guarded = the
    boosted weights summed to 0 and the staleness weights ``base`` (uniform if those are all 0 too)
    were used instead."""
    raw = (base + lam * utility).clamp_min(0.0)
    total = raw.sum()
    if total > 0:
        return raw / total, False
    if base.sum() > 0:
        return base / base.sum(), True
    return torch.full_like(base, 1.0 / len(base)), True  # every s(tau) underflowed: uniform


def ina_rescale(aggregate: torch.Tensor, grads: torch.Tensor) -> torch.Tensor:
    """Eq. 14: the direction of ``aggregate`` with the mean l2-norm of the rows of ``grads``."""
    norm = aggregate.norm()
    if norm == 0:
        return aggregate.clone()
    return aggregate / norm * grads.norm(dim=1).mean()


def utilities(his: torch.Tensor, s_his: torch.Tensor, g_pred: torch.Tensor, sim_t: float, n_fresh: int):
    """Eqs. 11-12 for the rows of ``his`` with staleness discounts ``s_his``: (cos, p_his, Util)."""
    cos = cosine_matrix(his, g_pred.unsqueeze(0)).squeeze(1)
    p_his = torch.where(cos >= sim_t, 1.0 - s_his, s_his)
    return cos, p_his, (cos - sim_t) * p_his * n_fresh


@dataclass
class RoundRecord:
    """One aggregation in L: the raw local gradients and what they were aggregated with."""

    round: int
    grads: torch.Tensor  # [K x d]
    clients: list[int]
    base_versions: torch.Tensor  # [K]
    s: torch.Tensor  # [K] staleness discount at aggregation time


class FedHist:
    def __init__(self, params: FedHistParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients
        h, d = params.history, like.numel()
        self.global_grads = torch.zeros(h, d, dtype=like.dtype, device=like.device)  # G, a ring of h rows
        self.global_rounds = torch.full((h,), -1, dtype=torch.long)  # round of each G row (-1: empty)
        self.local = deque(maxlen=h + 1)  # L: RoundRecords of rounds r - h ... r
        self.util_avg = torch.zeros(num_clients, dtype=like.dtype, device=like.device)  # U-bar per client
        self.evaluations: list[dict] = []  # utility evaluations, written when record_weights
        self.diagnostics = UtilityDiagnostics()  # kept and written only with params.diagnostics

    def discount(self, staleness: Sequence[int], like: torch.Tensor) -> torch.Tensor:
        """s(tau + offset) in float64: (e/2)^-tau underflows float32 near tau = 340."""
        off = self.params.staleness_offset
        values = [staleness_weight(self.params.staleness, tau + off) for tau in staleness]
        return torch.tensor(values, dtype=torch.float64, device=like.device)

    def history(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The filled rows of G and their rounds."""
        filled = (self.global_rounds >= 0).nonzero().flatten()
        return self.global_grads[filled.to(self.global_grads.device)], self.global_rounds[filled]

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        if not updates:
            return Aggregate(global_params.clone())
        # A canonical order makes every float sum, buffer and tie independent of arrival order.
        updates = sorted(updates, key=lambda u: (u.client, u.base_version))
        p = self.params
        grads = local_gradients(updates)
        s = self.discount([u.staleness for u in updates], grads)
        history, history_rounds = self.history()
        fused, chosen = egs_fuse(grads, history, p.alpha) if p.egs else egs_fuse(grads, history[:0], 0.0)
        clients = [u.client for u in updates]
        utility = self.util_avg[torch.tensor(clients, device=self.util_avg.device)].to(torch.float64)
        guarded = False
        if p.haa:
            weights, guarded = haa_weights(s, utility, p.lam)
        else:
            weights = torch.full_like(s, 1.0 / len(updates))
        g = weights.to(fused.dtype) @ fused
        g = ina_rescale(g, fused) if p.ina else g
        lr = sum(u.lr for u in updates) / len(updates)
        new = global_params - p.server_lr * lr * g
        self._remember(context.version, g, grads, updates, s)
        if p.diagnostics:
            self.diagnostics.aggregated([u.staleness for u in updates])
        if p.haa:
            self._evaluate(context.version)
        rounds = history_rounds.tolist()
        return Aggregate(new, weights=_by_client(clients, weights.tolist()), notes={
            u.client: {
                "staleness": u.staleness,
                "staleness_weight": float(s[i]),
                "utility": float(utility[i]),
                "collab_version": rounds[int(chosen[i])] + 1 if int(chosen[i]) >= 0 else -1,
                "haa_guard": guarded,
            }
            for i, u in enumerate(updates)
        })  # fmt: skip

    def _remember(self, rnd: int, g: torch.Tensor, grads: torch.Tensor, updates: Sequence[Update], s) -> None:
        slot = rnd % self.params.history
        self.global_grads[slot] = g
        self.global_rounds[slot] = rnd
        bases = torch.tensor([u.base_version for u in updates])
        self.local.append(RoundRecord(rnd, grads, [u.client for u in updates], bases, s))

    def _evaluate(self, rnd: int) -> None:
        """Eqs. 9-13 for the local gradients aggregated in round r - h."""
        target = rnd - self.params.history
        past = next((rec for rec in self.local if rec.round == target), None)
        if past is None:
            return
        fresh = [rec.grads[(rec.base_versions == target).to(rec.grads.device)] for rec in self.local]
        fresh = torch.cat(fresh)
        if self.params.diagnostics:
            self.diagnostics.evaluable(fresh.shape[0])
        if fresh.shape[0] == 0:
            return
        g_pred = fresh.mean(0)
        s_his = past.s.to(past.grads.dtype)
        cos, p_his, util = utilities(past.grads, s_his, g_pred, self.params.sim_t, fresh.shape[0])
        gamma = self.params.gamma
        for i, client in enumerate(past.clients):
            self.util_avg[client] = (1 - gamma) * self.util_avg[client] + gamma * util[i]
            if self.params.record_weights:
                self.evaluations.append({
                    "round": rnd + 1,
                    "evaluated_round": target + 1,
                    "client": client,
                    "fresh_updates": fresh.shape[0],
                    "similarity": float(cos[i]),
                    "p_his": float(p_his[i]),
                    "utility": float(util[i]),
                    "utility_avg": float(self.util_avg[client]),
                })  # fmt: skip

    def state_dict(self) -> dict:
        state = {
            "global_grads": self.global_grads,
            "global_rounds": self.global_rounds,
            "local": [asdict(record) for record in self.local],
            "util_avg": self.util_avg,
            "evaluations": [dict(row) for row in self.evaluations],
        }
        if self.params.diagnostics:  # only then: checkpoints of runs without it stay as they were
            state["diagnostics"] = self.diagnostics.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.global_grads.copy_(state["global_grads"])
        self.global_rounds.copy_(state["global_rounds"])
        self.local.clear()
        self.local.extend(RoundRecord(**record) for record in state["local"])
        self.util_avg.copy_(state["util_avg"])
        self.evaluations = [dict(row) for row in state["evaluations"]]
        if "diagnostics" in state:
            self.diagnostics.load_state_dict(state["diagnostics"])

    def extra_outputs(self) -> dict[str, list[dict]]:
        tables = {"fedhist_utilities.csv": self.evaluations} if self.params.record_weights else {}
        if self.params.diagnostics:
            tables[DIAGNOSTICS_FILE] = [self.diagnostics.row()]
        return tables


def _by_client(clients: list[int], weights: list[float]) -> dict[int, float]:
    """Aggregation weight per client (a client delivering twice in one buffer gets the sum)."""
    out: dict[int, float] = {}
    for c, w in zip(clients, weights):
        out[c] = out.get(c, 0.0) + w
    return out


STRATEGY = FedHist
PARAMS = FedHistParams
