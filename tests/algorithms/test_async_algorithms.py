"""K-async algorithms: FedBuff, FedAsync, FedHist (EGS / HAA / INA) and staleness from versions.

Numbers are computed by hand on tiny vectors in the docstrings/comments; the end-to-end tests run the
real SimPy servers with a hand-built device trace.
"""

from __future__ import annotations

import csv
import math

import pytest
import torch
from conftest import update as upd

from asyncfl.algorithms import PARAMS, Context, Update, algorithms_for, make_strategy
from asyncfl.algorithms.fedhist import cosine_matrix, egs_fuse, haa_weights, ina_rescale, utilities
from asyncfl.algorithms.staleness import staleness_weight
from asyncfl.config.loading import validate_scenario
from asyncfl.config.schema import Scenario
from asyncfl.runner.start import run_scenario

E2 = math.e / 2  # (e/2)^-tau is FedHist's discount


def params(name: str, **kw):
    k = PARAMS[name].tags.server_k or 2  # an algorithm may require its server.k (FedAsync: 1)
    return Scenario.model_validate({"server": {"mode": "k_async", "k": k}, "algorithm": {"name": name, **kw}}).algorithm


def ctx(rnd):
    return Context(version=rnd, time=float(rnd), num_clients=8)


def w0(d=2):
    return torch.zeros(d, dtype=torch.float64)


# --- staleness functions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "tau", "expected"),
    [
        ({"kind": "constant"}, 7, 1.0),
        ({"kind": "polynomial", "a": 0.5}, 3, 0.5),  # (1+3)^-0.5
        ({"kind": "hinge", "a": 10, "b": 4}, 4, 1.0),
        ({"kind": "hinge", "a": 10, "b": 4}, 6, 1 / 21),  # 1/(10*2+1)
        ({"kind": "exponential"}, 2, (2 / math.e) ** 2),
    ],
)
def test_staleness_functions(spec, tau, expected):
    s = params("fedbuff", staleness=spec).staleness
    assert staleness_weight(s, tau) == pytest.approx(expected)


def test_negative_staleness_is_an_error():
    with pytest.raises(ValueError, match="negative staleness -1"):
        staleness_weight(params("fedbuff").staleness, -1)


# --- FedBuff ------------------------------------------------------------------------------------


def test_fedbuff_full_cohort_zero_staleness_is_fedavg():
    ups = [upd(0, [1.0, 2.0]), upd(1, [3.0, -2.0]), upd(2, [2.0, 3.0])]
    fedavg = Scenario.model_validate({"algorithm": {"name": "fedavg", "server_lr": 0.5}}).algorithm
    a = make_strategy(fedavg, 3, w0()).aggregate(w0(), ups, ctx(0)).params
    b = make_strategy(params("fedbuff", server_lr=0.5), 3, w0()).aggregate(w0(), ups, ctx(0)).params
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(b, torch.tensor([1.0, 0.5], dtype=torch.float64))  # 0.5 * mean


def test_fedbuff_discounts_stale_updates():
    """w = 0 + (1/2) [ (1+0)^-0.5 (2, 0) + (1+3)^-0.5 (0, 4) ] = (1, 1)."""
    out = make_strategy(params("fedbuff"), 2, w0()).aggregate(w0(), [upd(0, [2.0, 0]), upd(1, [0, 4.0], 0, 3)], ctx(3))
    torch.testing.assert_close(out.params, torch.tensor([1.0, 1.0], dtype=torch.float64))
    assert out.weights == {0: 0.5, 1: 0.25}


def test_fedbuff_normalized_is_a_staleness_weighted_average():
    """DynSGD-style s = 1/(1+tau): s = 1 and 1/4, sum 1.25, weights 0.8 and 0.2: w = (1.6, 0.8)."""
    dyn = params("fedbuff", staleness={"kind": "polynomial", "a": 1.0}, normalize=True)
    out = make_strategy(dyn, 2, w0()).aggregate(w0(), [upd(0, [2.0, 0]), upd(1, [0, 4.0], 0, 3)], ctx(3))
    torch.testing.assert_close(out.params, torch.tensor([1.6, 0.8], dtype=torch.float64))
    assert out.weights == pytest.approx({0: 0.8, 1: 0.2})


def test_fedbuff_normalized_exponential_and_its_underflow_guard():
    """TWAFL-style s = (e/2)^-tau: tau 0 and 1 give weights 1/(1 + 2/e) and (2/e)/(1 + 2/e); at tau 3000
    both discounts underflow to 0 (exp(-920) < 5e-324) and the average is unweighted."""
    twafl = params("fedbuff", staleness={"kind": "exponential"}, normalize=True)
    out = make_strategy(twafl, 2, w0()).aggregate(w0(), [upd(0, [1.0, 0]), upd(1, [0, 1.0], 0, 1)], ctx(1))
    q = 2 / math.e
    torch.testing.assert_close(out.params, torch.tensor([1 / (1 + q), q / (1 + q)], dtype=torch.float64))
    old = [upd(0, [2.0, 0], 0, 3000), upd(1, [0, 4.0], 0, 3000)]
    out = make_strategy(twafl, 2, w0()).aggregate(w0(), old, ctx(3000))
    torch.testing.assert_close(out.params, torch.tensor([1.0, 2.0], dtype=torch.float64))


# --- FedAsync -----------------------------------------------------------------------------------


def test_fedasync_mixes_with_the_stale_base_model():
    """mixing 0.5, hinge a=1, b=0 (s = 1/(tau+1)).
    v0 = (0,0).  round 0: c0 base 0 tau 0, Delta (2,0): a = 0.5, w1 = 0.5*(0,0) + 0.5*(2,0) = (1,0).
    round 1: c1 base 1, Delta (0,4): a = .5, w2 = .5*(1,0) + .5*((1,0)+(0,4)) = (1,2).
    round 2: c2 base 0 (tau 2), Delta (3,3): a = .5/3, w3 = (1-1/6)(1,2) + 1/6*((0,0)+(3,3)) = (4/3, 13/6)."""
    s = make_strategy(params("fedasync", mixing=0.5, staleness={"kind": "hinge", "a": 1, "b": 0}), 3, w0())
    w = s.aggregate(w0(), [upd(0, [2.0, 0.0])], ctx(0)).params
    torch.testing.assert_close(w, torch.tensor([1.0, 0.0], dtype=torch.float64))
    w = s.aggregate(w, [upd(1, [0.0, 4.0], base=1)], ctx(1)).params
    torch.testing.assert_close(w, torch.tensor([1.0, 2.0], dtype=torch.float64))
    out = s.aggregate(w, [upd(2, [3.0, 3.0], base=0, staleness=2)], ctx(2))
    torch.testing.assert_close(out.params, torch.tensor([4 / 3, 13 / 6], dtype=torch.float64))
    assert out.weights == {2: pytest.approx(0.5 / 3)}


def test_fedasync_refuses_buffers_and_forgotten_versions():
    s = make_strategy(params("fedasync", keep_versions=1), 3, w0())
    with pytest.raises(ValueError, match="server.k: 1"):
        s.aggregate(w0(), [upd(0, [1.0, 0]), upd(1, [1.0, 0])], ctx(0))
    w = s.aggregate(w0(), [upd(0, [1.0, 0])], ctx(0)).params
    w = s.aggregate(w, [upd(1, [1.0, 0], base=0, staleness=1)], ctx(1)).params  # 1 stale: still kept
    with pytest.raises(ValueError, match="version 0 is no longer kept"):
        s.aggregate(w, [upd(2, [1.0, 0], base=0, staleness=2)], ctx(2))


# --- FedHist: the pure pieces -------------------------------------------------------------------


def test_ina_output_norm_is_the_mean_local_norm():
    grads = torch.tensor([[3.0, 4.0], [0.0, 1.0], [-6.0, 8.0]], dtype=torch.float64)  # norms 5, 1, 10
    out = ina_rescale(grads.mean(0), grads)
    assert float(out.norm()) == pytest.approx(16 / 3)
    assert float(cosine_matrix(out[None], grads.mean(0)[None])) == pytest.approx(1.0)  # direction kept


def test_haa_weights_sum_to_one_and_reduce_to_staleness_weights():
    tau = torch.tensor([1.0, 2.0, 5.0], dtype=torch.float64)
    base = E2**-tau
    util = torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64)
    p0, guarded = haa_weights(base, util, 0.0)
    torch.testing.assert_close(p0, base / base.sum())
    assert not guarded
    p, _ = haa_weights(base, util, 0.1)
    assert float(p.sum()) == pytest.approx(1.0)
    raw = base + 0.1 * util
    torch.testing.assert_close(p, raw / raw.sum())
    clipped, guarded = haa_weights(base, torch.tensor([-100.0, 0.0, 0.0], dtype=torch.float64), 1.0)
    assert float(clipped[0]) == 0 and float(clipped.sum()) == pytest.approx(1.0) and not guarded
    fallback, guarded = haa_weights(base, torch.full((3,), -100.0, dtype=torch.float64), 1.0)
    assert guarded
    torch.testing.assert_close(fallback, base / base.sum())


def test_egs_picks_the_least_similar_history_entry():
    history = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.2], [0.5, 0.5]], dtype=torch.float64)
    grads = torch.tensor([[1.0, 0.1], [0.1, -1.0], [-1.0, -1.0]], dtype=torch.float64)
    fused, chosen = egs_fuse(grads, history, 0.5)
    # cosines: row 0 most opposed to (-1, .2); row 1 to (0, 1); row 2 to (.5, .5).
    assert chosen.tolist() == [2, 1, 3]
    torch.testing.assert_close(fused, grads + 0.5 * history[[2, 1, 3]])
    same, none = egs_fuse(grads, history[:0], 0.5)
    torch.testing.assert_close(same, grads)
    assert none.tolist() == [-1, -1, -1]


@pytest.mark.parametrize("sim_t", [-0.5, 0.0, 0.3, 0.9])
def test_utility_sign_follows_sim_t(sim_t):
    his = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.3]], dtype=torch.float64)
    g_pred = torch.tensor([2.0, 1.0], dtype=torch.float64)
    s_his = E2 ** -torch.tensor([1.0, 2.0, 3.0, 1.0], dtype=torch.float64)
    cos, p_his, util = utilities(his, s_his, g_pred, sim_t, 4)
    for c, p, u, s in zip(cos.tolist(), p_his.tolist(), util.tolist(), s_his.tolist()):
        assert (u > 0) == (c > sim_t) and (u < 0) == (c < sim_t)
        assert p == pytest.approx(1 - s if c >= sim_t else s)
        assert u == pytest.approx((c - sim_t) * p * 4)


# --- FedHist: the strategy over several rounds --------------------------------------------------


def test_fedhist_with_empty_history_is_the_haa_weighted_average():
    """Round 0, EGS on (no history yet), INA off, lr 0.5, server_lr 1: w = sum p_i Delta_i with
    p proportional to (e/2)^-(tau+1) for staleness 0 and 2 (utilities start at 0)."""
    s = make_strategy(params("fedhist", ina=False, lam=5.0), 4, w0())
    ups = [upd(0, [1.0, 0.0], lr=0.5), upd(1, [0.0, 2.0], lr=0.5, staleness=2)]
    out = s.aggregate(w0(), ups, ctx(2))
    p = torch.tensor([E2**-1, E2**-3], dtype=torch.float64)
    p = p / p.sum()
    torch.testing.assert_close(out.params, p[0] * ups[0].delta + p[1] * ups[1].delta)
    assert out.weights == {0: pytest.approx(float(p[0])), 1: pytest.approx(float(p[1]))}
    assert out.notes[0]["collab_version"] == -1


def test_fedhist_with_every_part_off_is_fedavg():
    s = make_strategy(params("fedhist", egs=False, haa=False, ina=False, server_lr=0.7), 4, w0())
    ups = [upd(0, [1.0, 0.0], lr=0.1), upd(1, [0.0, 2.0], lr=0.1, staleness=4), upd(2, [3.0, 1.0], lr=0.1)]
    torch.testing.assert_close(s.aggregate(w0(), ups, ctx(5)).params, 0.7 * torch.stack([u.delta for u in ups]).mean(0))


def test_fedhist_ina_step_has_the_mean_local_norm():
    """With lr 0.2 the local gradients are -Delta/0.2: norms 5 and 10, so the step is 0.2 * 7.5 = 1.5."""
    s = make_strategy(params("fedhist", haa=False), 4, w0())
    ups = [upd(0, [0.6, 0.8], lr=0.2), upd(1, [-2.0, 0.0], lr=0.2)]
    assert float(s.aggregate(w0(), ups, ctx(0)).params.norm()) == pytest.approx(1.5)


def test_fedhist_utilities_and_weights_over_three_rounds():
    """h = 1, K = 2, lr 1, alpha 0 (EGS picks but adds nothing), sim_T 0.5, gamma 0.5, lambda 1.

    round 0: c0 g=(1,0), c1 g=(0,1), both base 0, tau 0 -> G = [round-0 global gradient].
    round 1: c2 g=(1,0) base 0 (tau 1), c3 g=(-1,0) base 1.  Evaluate round 0 (r - h = 0):
      S = gradients with base 0 in rounds 0..1 = (1,0),(0,1),(1,0): g_pred = (2/3, 1/3), |S| = 3.
      c0: cos = 2/sqrt5 >= .5, p_his = 1 - (e/2)^-1;  Util = (2/sqrt5 - .5) p_his 3; U = .5 Util.
      c1: cos = 1/sqrt5 <  .5, p_his = (e/2)^-1;      Util = (1/sqrt5 - .5) p_his 3 < 0.
    round 2: c0 and c1 again with tau 0: p proportional to (e/2)^-1 + U_i.
    """
    s = make_strategy(
        params("fedhist", history=1, alpha=0.0, sim_t=0.5, gamma=0.5, lam=1.0, record_weights=True), 4, w0()
    )
    w = s.aggregate(w0(), [upd(0, [-1.0, 0.0]), upd(1, [0.0, -1.0])], ctx(0)).params
    w = s.aggregate(w, [upd(2, [-1.0, 0.0], base=0, staleness=1), upd(3, [1.0, 0.0], base=1)], ctx(1)).params
    q = E2**-1
    u0 = 0.5 * (2 / math.sqrt(5) - 0.5) * (1 - q) * 3
    u1 = 0.5 * (1 / math.sqrt(5) - 0.5) * q * 3
    assert u0 > 0 > u1
    assert s.util_avg[0] == pytest.approx(u0) and s.util_avg[1] == pytest.approx(u1)
    assert float(s.util_avg[2:].abs().sum()) == 0
    out = s.aggregate(w, [upd(0, [-1.0, 0.0], base=2), upd(1, [0.0, -1.0], base=2)], ctx(2))
    total = (q + u0) + (q + u1)
    assert out.weights == {0: pytest.approx((q + u0) / total), 1: pytest.approx((q + u1) / total)}
    assert out.notes[0]["utility"] == pytest.approx(u0)
    assert out.notes[0]["collab_version"] == 2  # h = 1: only round 1's global gradient (version 2) is kept
    rows = s.extra_outputs()["fedhist_utilities.csv"]
    assert [(r["round"], r["evaluated_round"], r["client"], r["fresh_updates"]) for r in rows[:2]] == [
        (2, 1, 0, 3),
        (2, 1, 1, 3),
    ]


def test_fedhist_egs_fuses_with_the_least_similar_past_global_gradient():
    """h = 2, alpha .5, HAA and INA off: the global gradient of a round is the fused local gradient.
    round 0: g = (1,0) (no history).  round 1: local (0,1), history {(1,0)}: g = (0,1) + .5 (1,0) = (.5,1).
    round 2: local (1,.2): cos with (1,0) = .981, with (.5,1) = .614, so it takes round 1's (.5,1):
    g~ = (1,.2) + .5 (.5,1) = (1.25,.7) and w drops by (1.25,.7)."""
    s = make_strategy(params("fedhist", history=2, alpha=0.5, haa=False, ina=False), 4, w0())
    w = s.aggregate(w0(), [upd(0, [-1.0, 0.0])], ctx(0)).params
    w = s.aggregate(w, [upd(0, [0.0, -1.0])], ctx(1)).params
    before = w.clone()
    out = s.aggregate(w, [upd(1, [-1.0, -0.2], base=1, staleness=1)], ctx(2))
    torch.testing.assert_close(out.params, before - torch.tensor([1.25, 0.7], dtype=torch.float64))
    assert out.notes[1]["collab_version"] == 2  # produced by round 1


@pytest.mark.parametrize("name", algorithms_for("k_async"))
def test_strategies_do_not_mutate_their_inputs(name):
    s = make_strategy(params(name), 4, w0())
    w = torch.tensor([0.5, -0.5], dtype=torch.float64)
    ups = [upd(0, [1.0, 2.0]), upd(1, [-1.0, 0.5], staleness=1)][: PARAMS[name].tags.server_k]
    copies = [u.delta.clone() for u in ups]
    out = s.aggregate(w, ups, ctx(1))
    assert torch.equal(w, torch.tensor([0.5, -0.5], dtype=torch.float64))
    assert all(torch.equal(u.delta, c) for u, c in zip(ups, copies))
    assert torch.isfinite(out.params).all() and all(math.isfinite(v) for v in out.weights.values())


# --- end to end: staleness from versions through the real K-async server ---------------------------------------


def _trace(tmp_path, speeds):
    path = tmp_path / "trace.csv"
    rows = ["client,samples_per_s,uplink_mbps,downlink_mbps,latency_s"]
    rows += [f"{c},{s},1e9,1e9,0" for c, s in enumerate(speeds)]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _run(tmp_path, name, raw):
    base = {
        "name": name,
        "data": {"dataset": "digits", "clients": 2},
        "model": {"name": "logreg"},
        "training": {"local_steps": 1, "batch_size": 10},
        "eval": {"per_client": False},
        "output": {"events": "none", "plot": False},
    }
    for key, value in raw.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    out = tmp_path / name
    run_scenario(validate_scenario(base), out)
    return out


def _csv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_staleness_is_computed_from_versions(tmp_path):
    """Client 0 takes 10/10 = 1 s per task, client 1 10/4 = 2.5 s (transfers ~0), K = 1:
    t=1 c0 (base 0) -> v1 (tau 0); t=2 c0 (base 1) -> v2 (tau 0); t=2.5 c1 (base 0) -> v3 (tau 2);
    t=3 c0 (base 2) -> v4 (tau 1); t=4 c0 (base 4) -> v5 (tau 0)."""
    out = _run(tmp_path, "stale", {
        "population": {"device_trace": _trace(tmp_path, [10, 4])},
        "server": {"mode": "k_async", "k": 1, "concurrency": 2},
        "algorithm": {"name": "fedbuff", "record_weights": True},
        "stop": {"rounds": 5},
    })  # fmt: skip
    rows = _csv(out / "weights.csv")
    assert [(int(r["round"]), int(r["client"]), int(r["staleness"])) for r in rows] == [
        (1, 0, 0),
        (2, 0, 0),
        (3, 1, 2),
        (4, 0, 1),
        (5, 0, 0),
    ]
    assert [float(r["weight"]) for r in rows] == pytest.approx([1, 1, 3**-0.5, 2**-0.5, 1])  # (1+tau)^-0.5
    times = [float(r["time"]) for r in _csv(out / "metrics.csv")[1:]]
    assert times == pytest.approx([1, 2, 2.5, 3, 4], abs=1e-3)


def test_fedhist_survives_staleness_that_underflows_the_discount():
    """(e/2)^-tau is ~1e-54 at tau = 400 (0 in float32) and 0 in float64 at tau = 6000: weights stay finite."""
    s = make_strategy(params("fedhist"), 4, torch.zeros(2))
    ups = [Update(c, torch.tensor([1.0, -1.0]), 0, tau, 10, 1, 0.1) for c, tau in ((0, 400), (1, 6000))]
    out = s.aggregate(torch.zeros(2), ups, ctx(6000))
    assert torch.isfinite(out.params).all()
    assert out.weights == {0: pytest.approx(1.0), 1: pytest.approx(0.0)}
    both = s.aggregate(torch.zeros(2), [ups[1], Update(2, torch.tensor([1.0, 1.0]), 0, 7000, 10, 1, 0.1)], ctx(7000))
    assert both.weights == {1: pytest.approx(0.5), 2: pytest.approx(0.5)} and both.notes[1]["haa_guard"]


def test_fedhist_run_writes_its_diagnostics(tmp_path):
    """The schedule of test_staleness_is_computed_from_versions (base versions 0, 1, 0, 2, 4 in rounds 0-4;
    tau 0, 0, 2, 1, 0) with h = 1: S for round r holds the updates of rounds r-1 and r based on r-1:
    r1: 1 (round 0's), r2: 1 (round 1's), r3: 1 (round 3's), r4: 0; round 0 has no r - h.
    So 5 rounds, 4 evaluable, 3 evaluated (0.6), mean |S| 3/4, 3/3 when evaluated, mean staleness 3/5."""
    out = _run(tmp_path, "diag", {
        "population": {"device_trace": _trace(tmp_path, [10, 4])},
        "server": {"mode": "k_async", "k": 1, "concurrency": 2},
        "algorithm": {"name": "fedhist", "history": 1, "diagnostics": True},
        "stop": {"rounds": 5},
    })  # fmt: skip
    (row,) = _csv(out / "fedhist_diagnostics.csv")
    assert {k: float(v) for k, v in row.items()} == pytest.approx({
        "rounds": 5, "rounds_evaluable": 4, "rounds_evaluated": 3, "evaluated_fraction": 0.6,
        "mean_fresh": 0.75, "mean_fresh_evaluated": 1.0, "mean_staleness": 0.6,
    })  # fmt: skip
