"""Client-unavailability algorithms for synchronous rounds: hand-computed aggregations over several
rounds on tiny vectors, and the invariants of each paper (docs/explanation/architecture.md section 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from asyncfl.algorithms import REGISTRY, Context, Update
from asyncfl.algorithms.fedar import FedArParams, LinearCutoff, psi
from asyncfl.algorithms.fedau import FedAuParams
from asyncfl.algorithms.fedavg import FedAvgParams
from asyncfl.algorithms.fedavg_known_p import FedAvgKnownPParams
from asyncfl.algorithms.fedvarp import FedVarpParams
from asyncfl.algorithms.fl_fdms import Elimination, FlFdmsParams, elimination_threshold
from asyncfl.algorithms.mifa import MifaParams


def upd(client: int, delta, rnd: int = 0, lr: float = 0.1, base: int | None = None) -> Update:
    base = rnd if base is None else base
    return Update(client, torch.tensor(delta, dtype=torch.float64), base, rnd - base, 10, 5, lr)


def ctx(rnd: int, n: int, participation=None) -> Context:
    return Context(version=rnd, time=float(rnd), num_clients=n, participation=participation)


def run(strategy, rounds: list[list[Update]], n: int, dim: int = 1, participation=None) -> list[list[float]]:
    """Feed the rounds in order from w = 0; return the global vector after each round."""
    w = torch.zeros(dim, dtype=torch.float64)
    out = []
    for t, updates in enumerate(rounds):
        w = strategy.aggregate(w, updates, ctx(t, n, participation)).params
        out.append(w.tolist())
    return out


def make(cls, params, n: int, dim: int = 1):
    return cls(params, n, torch.zeros(dim, dtype=torch.float64))


# --- FedAvg variants ---------------------------------------------------------------------------


def test_fedavg_all_clients_divides_the_sum_by_n():
    s = make(REGISTRY["fedavg"], FedAvgParams(name="fedavg", weighting="all_clients"), 4, 2)
    # (1,0) + (0,2) over N = 4
    assert run(s, [[upd(0, [1.0, 0.0]), upd(1, [0.0, 2.0])]], 4, 2) == [[0.25, 0.5]]


def test_fedavg_known_p_weights_by_inverse_probability():
    s = make(REGISTRY["fedavg_known_p"], FedAvgKnownPParams(name="fedavg_known_p"), 2)
    # 1/N * (1/0.5 + 1/0.25) = 1/2 * 6 = 3 ; next round only client 1: 1/2 * 2/0.25 = 4
    out = run(s, [[upd(0, [1.0]), upd(1, [1.0])], [upd(1, [2.0], 1)]], 2, participation=(0.5, 0.25))
    assert out == [[3.0], [7.0]]


def test_fedavg_known_p_refuses_missing_probabilities():
    s = make(REGISTRY["fedavg_known_p"], FedAvgKnownPParams(name="fedavg_known_p"), 2)
    with pytest.raises(ValueError, match="participation probability"):
        run(s, [[upd(0, [1.0])]], 2, participation=(math.nan, 0.5))
    with pytest.raises(ValueError, match="Context.participation"):
        run(s, [[upd(0, [1.0])]], 2)


# --- MIFA ----------------------------------------------------------------------------------------


def test_mifa_averages_the_latest_update_of_every_seen_client():
    s = make(REGISTRY["mifa"], MifaParams(name="mifa"), 3)
    rounds = [[upd(0, [3.0])], [upd(1, [6.0], 1)], [upd(0, [-3.0], 2)], []]
    # r0: 3 | r1: (3+6)/2 = 4.5 | r2: (-3+6)/2 = 1.5 | r3: nobody, memory again 1.5
    assert run(s, rounds, 3) == [[3.0], [7.5], [9.0], [10.5]]


def test_mifa_wait_for_all_waits_then_averages_over_n():
    s = make(REGISTRY["mifa"], MifaParams(name="mifa", wait_for_all=True), 3)
    rounds = [[upd(0, [3.0])], [upd(1, [6.0], 1)], [upd(0, [-3.0], 2)], [upd(2, [3.0], 3)]]
    # nothing until client 2 arrives; then (-3 + 6 + 3) / 3 = 2
    assert run(s, rounds, 3) == [[0.0], [0.0], [0.0], [2.0]]


# --- FedVARP -------------------------------------------------------------------------------------


def test_fedvarp_hand_computed_rounds():
    s = make(REGISTRY["fedvarp"], FedVarpParams(name="fedvarp"), 3)
    rounds = [
        [upd(0, [4.0]), upd(1, [2.0])],  # y = 0: v = mean(4, 2) = 3                  -> 3
        [upd(1, [5.0], 1)],  # v = (4+2+0)/3 + (5-2) = 5                               -> 8
        [],  # no participant: no update                                               -> 8
        [upd(2, [3.0], 3), upd(0, [1.0], 3)],  # v = (4+5+0)/3 + ((3-0)+(1-4))/2 = 3    -> 11
    ]
    assert run(s, rounds, 3) == [[3.0], [8.0], [8.0], [11.0]]


def test_fedvarp_first_round_is_fedavg_over_participants():
    s = make(REGISTRY["fedvarp"], FedVarpParams(name="fedvarp"), 10, 3)
    us = [upd(c, torch.randn(3, generator=torch.Generator().manual_seed(c)).tolist()) for c in (2, 5, 7)]
    out = s.aggregate(torch.zeros(3, dtype=torch.float64), us, ctx(0, 10)).params
    torch.testing.assert_close(out, sum(u.delta for u in us) / 3)


# --- FedAR ---------------------------------------------------------------------------------------


def test_fedar_hand_computed_rounds_with_exclusion():
    """rho = 1 (psi = min(tau + 1, 2)) and g(t) = 1.5 + t/1000: clients inactive 2+ rounds are out."""
    params = FedArParams(name="fedar", rho=1.0, cutoff=LinearCutoff(kind="linear", t0=1.5, b=1000))
    s = make(REGISTRY["fedar"], params, 3)
    rounds = [
        [upd(0, [1.0], lr=0.5), upd(1, [2.0], lr=0.5)],  # psi (1, 1), N_t = 2: (1+2)/2 = 1.5        -> 1.5
        [upd(0, [4.0], 1, lr=0.5)],  # tau (0, 1): psi (1, 2), N_t = 2: (4 + 2*2)/2 = 4                -> 5.5
        [upd(2, [3.0], 2, lr=0.5)],  # tau (1, 2, 0): psi (2, 0, 1), N_t = 2: (2*4 + 3)/2 = 5.5         -> 11
        [],  # tau (2, 3, 1): only client 2, psi 2, N_t = 1: 2*3 = 6                                   -> 17
        [],  # everybody excluded: N_t = 0, no update                                                 -> 17
    ]
    assert run(s, rounds, 3) == [[1.5], [5.5], [11.0], [17.0], [17.0]]
    assert [r["n_t"] for r in s.log] == [2, 2, 2, 1, 0]
    assert [r["excluded"] for r in s.log] == ["", "", "1", "0 1", "0 1 2"]


def test_fedar_step_ratio_is_opt_in_and_hand_computed():
    """The rounds of the test above: psi per round (1, 1), (1, 2), (2, 0, 1), (0, 0, 2), (0, 0, 0) over
    N_t = 2, 2, 2, 1, 0, so sum(psi) = 2, 3, 3, 2, 0 and step_ratio = 1, 1.5, 1.5, 2, nan (N_t = 0)."""
    rounds = [[upd(0, [1.0]), upd(1, [2.0])], [upd(0, [4.0], 1)], [upd(2, [3.0], 2)], [], []]
    cutoff = LinearCutoff(kind="linear", t0=1.5, b=1000)
    off = make(REGISTRY["fedar"], FedArParams(name="fedar", rho=1.0, cutoff=cutoff), 3)
    run(off, rounds, 3)
    assert set(off.log[0]) == {"round", "g", "n_t", "excluded"}  # default: the file keeps its columns
    on = make(REGISTRY["fedar"], FedArParams(name="fedar", rho=1.0, cutoff=cutoff, record_step_ratio=True), 3)
    assert run(on, rounds, 3) == run(make(REGISTRY["fedar"], off.params, 3), rounds, 3)  # recording only
    assert [r["psi_sum"] for r in on.log] == [2.0, 3.0, 3.0, 2.0, 0.0]
    assert [r["step_ratio"] for r in on.log[:4]] == [1.0, 1.5, 1.5, 2.0] and math.isnan(on.log[4]["step_ratio"])


def test_fedar_records_exclusions_and_inactive_rounds_in_weights():
    params = FedArParams(name="fedar", rho=1.0, cutoff=LinearCutoff(kind="linear", t0=1.5, b=1000))
    s = make(REGISTRY["fedar"], params, 3)
    w = torch.zeros(1, dtype=torch.float64)
    for t, us in enumerate([[upd(0, [1.0]), upd(1, [2.0])], [upd(0, [4.0], 1)], [upd(2, [3.0], 2)]]):
        result = s.aggregate(w, us, ctx(t, 3))
        w = result.params
    assert result.weights == {0: 1.0, 1: 0.0, 2: 0.5}  # psi / N_t = (2, 0, 1) / 2
    assert result.notes[1] == {"inactive_rounds": 2, "psi": 0.0, "excluded": True}
    assert result.notes[0]["inactive_rounds"] == 1 and not result.notes[0]["excluded"]


def test_fedar_psi_bounds():
    tau = np.arange(0, 5000, dtype=np.float64)
    w = psi(tau, math.inf, 0.1, 2.0)
    assert w[0] == 1.0  # a client received this round weighs as in FedAvg
    assert w.max() <= 2.0 and np.all(np.diff(w) >= 0)
    assert w[1023] == pytest.approx(2.0)  # (tau + 1)^0.1 reaches 2 at tau = 1023
    assert np.all(psi(tau, 10.0, 0.1, 2.0)[10:] == 0.0) and np.all(psi(tau, 10.0, 0.1, 2.0)[:10] > 0)


# --- FedAU ---------------------------------------------------------------------------------------


def test_fedau_hand_computed_intervals_and_aggregation():
    s = make(REGISTRY["fedau"], FedAuParams(name="fedau", cutoff=None), 2)
    rounds = [[upd(0, [1.0])], [upd(1, [1.0], 1)], [upd(0, [1.0], 2)], [upd(0, [1.0], 3), upd(1, [1.0], 3)]]
    # omega used: r0 (1, .), r1 (., 1), r2: client 0 closed an interval of 1 -> 1; r3: client 0 intervals 1, 2 ->
    # 1.5, client 1 first interval (rounds 0..1) = 2 -> 2.  steps: 1/2, 1/2, 1/2, (1.5 + 2)/2
    assert run(s, rounds, 2) == [[0.5], [1.0], [1.5], [3.25]]
    # after round 3: client 0 intervals 1, 2, 1 -> 4/3; client 1 intervals 2, 2 -> 2
    np.testing.assert_allclose(s.omega, [4 / 3, 2.0])


def test_fedau_weight_is_at_most_k_and_k1_gives_one():
    for k in (1, 2, 5):
        s = make(REGISTRY["fedau"], FedAuParams(name="fedau", cutoff=k), 3)
        rng = np.random.default_rng(k)
        for t in range(200):
            us = [upd(c, [1.0], t) for c in range(3) if rng.random() < 0.05 * (c + 1)]
            s.aggregate(torch.zeros(1, dtype=torch.float64), us, ctx(t, 3))
            assert np.all(s.omega <= k)
            if k == 1:
                assert np.all(s.omega == 1.0)


def test_fedau_bernoulli_mean_weight_near_inverse_p():
    p, rounds = 0.25, 4000
    s = make(REGISTRY["fedau"], FedAuParams(name="fedau", cutoff=None), 1)
    rng = np.random.default_rng(0)
    used = []
    for t in range(rounds):
        used.append(s.omega[0])
        us = [upd(0, [1.0], t)] if rng.random() < p else []
        s.aggregate(torch.zeros(1, dtype=torch.float64), us, ctx(t, 1))
    assert np.mean(used[rounds // 10 :]) == pytest.approx(1 / p, rel=0.08)


# --- FL-FDMS -------------------------------------------------------------------------------------


def test_fl_fdms_hand_computed_similarity_and_substitution():
    s = make(REGISTRY["fl_fdms"], FlFdmsParams(name="fl_fdms"), 4, 2)
    r0 = [upd(0, [1.0, 0.0]), upd(1, [2.0, 0.0]), upd(2, [0.0, 1.0]), upd(3, [-1.0, 0.0])]
    r1 = [upd(1, [0.0, 2.0], 1), upd(2, [0.0, 1.0], 1), upd(3, [1.0, 0.0], 1)]
    r2 = [upd(3, [0.0, 4.0], 2)]
    out = run(s, [r0, r1, r2], 4, 2)
    # r0 nobody dropped: FedAvg.  r1: client 0's friend is 1 (R = 1 vs 0.5 and 0): ((0,2)*2 + (0,1) + (1,0))/4
    # r2: everybody takes client 3's update: (0, 4)
    assert out == [[0.5, 0.25], [0.75, 1.5], [0.75, 5.5]]
    expected = np.array([[0, 1, 0.5, 0], [1, 0, 0.75, 0.25], [0.5, 0.75, 0, 0.5], [0, 0.25, 0.5, 0]])
    np.testing.assert_allclose(s.similarity, expected)
    np.testing.assert_array_equal(s.co_active, [[0, 1, 1, 1], [1, 0, 2, 2], [1, 2, 0, 2], [1, 2, 2, 0]])
    assert s.substituted.tolist() == [2, 1, 1, 0] and s.served.tolist() == [0, 1, 0, 3]
    assert [r["pairs_all"] for r in s.log] == [6, 3, 0]


def test_fl_fdms_without_information_uses_the_mean_and_ties_go_to_lowest_id():
    s = make(REGISTRY["fl_fdms"], FlFdmsParams(name="fl_fdms"), 4, 2)
    result = s.aggregate(torch.zeros(2, dtype=torch.float64), [upd(0, [1.0, 0.0]), upd(1, [0.0, 1.0])], ctx(0, 4))
    assert result.params.tolist() == [0.5, 0.5]  # two mean substitutes: plain FedAvg
    assert result.notes[2]["substitute"] == "mean" and s.mean_fallbacks.tolist() == [0, 0, 1, 1]
    s = make(REGISTRY["fl_fdms"], FlFdmsParams(name="fl_fdms"), 3, 2)
    same = [upd(c, [1.0, 0.0]) for c in range(3)]
    s.aggregate(torch.zeros(2, dtype=torch.float64), same, ctx(0, 3))
    result = s.aggregate(torch.zeros(2, dtype=torch.float64), [upd(1, [1.0, 0.0], 1), upd(0, [0.0, 1.0], 1)], ctx(1, 3))
    assert result.notes[2]["substitute"] == 0  # R(2,0) = R(2,1) = 1: lowest id


def test_fl_fdms_similarity_symmetric_in_unit_interval_and_substitutes_active():
    n, dim = 8, 5
    s = make(REGISTRY["fl_fdms"], FlFdmsParams(name="fl_fdms"), n, dim)
    gen = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(1)
    w = torch.zeros(dim, dtype=torch.float64)
    for t in range(30):
        active = [c for c in range(n) if rng.random() < 0.5] or [0]
        us = [upd(c, torch.randn(dim, generator=gen, dtype=torch.float64).tolist(), t) for c in active]
        result = s.aggregate(w, us, ctx(t, n))
        for k, note in result.notes.items():
            if k not in active:
                assert note["substitute"] == "mean" or note["substitute"] in active
        assert sum(result.weights.values()) == pytest.approx(1.0)
    np.testing.assert_array_equal(s.similarity, s.similarity.T)
    assert s.similarity.min() >= 0.0 and s.similarity.max() <= 1.0


def test_fl_fdms_candidate_elimination_saves_pairs():
    params = FlFdmsParams(name="fl_fdms", elimination=Elimination(enabled=True, scale=1e-9))
    s = make(REGISTRY["fl_fdms"], params, 4, 2)
    r0 = [upd(0, [1.0, 0.0]), upd(1, [2.0, 0.0]), upd(2, [0.0, 1.0]), upd(3, [-1.0, 0.0])]
    r1 = [upd(c, [1.0, 1.0], 1) for c in range(4)]
    run(s, [r0, r1], 4, 2)
    # after r0 (threshold ~ 0): C^0 = {1}, C^1 = {0}, C^2 = {0, 1, 3} (all tie at 0.5), C^3 = {2}
    assert s.candidates.tolist() == [
        [False, True, False, False],
        [True, False, False, False],
        [True, True, False, True],
        [False, False, True, False],
    ]
    # r1 compares (0,1), (0,2), (1,2), (2,3): 4 of 6 pairs
    assert [(r["pairs_all"], r["pairs_computed"]) for r in s.log] == [(6, 6), (6, 4)]


def test_fl_fdms_threshold_of_theorem_2():
    spec = Elimination(enabled=True, confidence=0.1, beta=0.5, delta_f=0.1, horizon_rounds=100, max_friends=3)
    # sqrt((2 ln(2 * 16 * 100 * 3) - 2 ln 0.1) / (0.5 * 2)) + 0.1 = sqrt(18.3391 + 4.6052) + 0.1
    assert elimination_threshold(spec, 4, 2) == pytest.approx(math.sqrt(22.9443) + 0.1, rel=1e-4)


# --- contract: every algorithm equals FedAvg when every client is available every round ---------

FULL = {
    "fedar": FedArParams(name="fedar"),
    "mifa": MifaParams(name="mifa"),
    "fedvarp": FedVarpParams(name="fedvarp"),
    "fedau": FedAuParams(name="fedau"),
    "fl_fdms": FlFdmsParams(name="fl_fdms", elimination=Elimination(enabled=True, scale=0.01)),
    "fedavg_known_p": FedAvgKnownPParams(name="fedavg_known_p"),
}


@pytest.mark.parametrize("name", sorted(FULL))
def test_full_participation_equals_fedavg(name):
    n, dim, rounds = 5, 7, 6
    gen = torch.Generator().manual_seed(3)
    deltas = [[torch.randn(dim, generator=gen, dtype=torch.float64) for _ in range(n)] for _ in range(rounds)]
    fedavg = make(REGISTRY["fedavg"], FedAvgParams(name="fedavg"), n, dim)
    other = make(REGISTRY[name], FULL[name], n, dim)
    w_ref = w = torch.randn(dim, generator=gen, dtype=torch.float64)
    for t in range(rounds):
        us = [Update(c, deltas[t][c], t, 0, 10, 5, 0.1) for c in range(n)]
        copies = [u.delta.clone() for u in us]
        w_ref = fedavg.aggregate(w_ref, us, ctx(t, n)).params
        result = other.aggregate(w, us, ctx(t, n, participation=(1.0,) * n))
        w = result.params
        torch.testing.assert_close(w, w_ref)
        assert all(torch.equal(u.delta, c) for u, c in zip(us, copies))  # inputs not mutated
        assert all(math.isfinite(v) for v in result.weights.values())


# --- end to end through the runner -------------------------------------------------------------


def _scenario(algorithm: dict, availability: dict, partition: dict | None = None):
    from asyncfl.config import validate_scenario

    return validate_scenario({
        "name": "t",
        "device": "cpu",
        "data": {"dataset": "digits", "clients": 8, "partition": partition or {"kind": "clusters", "clusters": 4}},
        "model": {"name": "logreg"},
        "training": {"local_steps": 2, "batch_size": 16, "lr": 0.1},
        "population": {"availability": availability},
        "algorithm": {**algorithm, "record_weights": True},
        "stop": {"rounds": 4},
        "eval": {"per_client": False},
        "output": {"events": "none", "plot": False},
    })  # fmt: skip


def test_runner_passes_participation_and_writes_diagnostics(tmp_path):
    from asyncfl.output.reading import read_csv
    from asyncfl.runner.start import run_scenario

    run = run_scenario(_scenario({"name": "fl_fdms"}, {"kind": "cluster_dropout", "alpha": 0.5}), tmp_path / "a")
    subs = read_csv(run / "fl_fdms_substitutions.csv")
    assert sum(int(r["substituted"]) for r in subs) == 4 * 4  # 4 of 8 clients dropped in each of 4 rounds
    weights = read_csv(run / "weights.csv")
    by_round = {}
    for r in weights:
        by_round.setdefault(r["round"], []).append(r)
    for rows in by_round.values():
        active = {r["client"] for r in rows if r["substitute"] == ""}
        assert len(active) == 4 and all(r["substitute"] in active | {"mean"} for r in rows if r["substitute"])
    clients = read_csv(run / "clients.csv")
    assert {float(r["availability_p"]) for r in clients} == {0.5}
    assert [r["pairs_all"] for r in read_csv(run / "fl_fdms_similarity_computations.csv")] == ["6"] * 4

    avail = {"kind": "bernoulli", "p": {"dist": "label_correlated"}}
    run = run_scenario(
        _scenario({"name": "fedavg_known_p"}, avail, {"kind": "classes", "per_client": 2}), tmp_path / "b"
    )
    p = {r["client"]: float(r["availability_p"]) for r in read_csv(run / "clients.csv")}
    for r in read_csv(run / "weights.csv"):
        assert float(r["weight"]) == pytest.approx(1 / (8 * p[r["client"]]), rel=1e-4)

    run = run_scenario(_scenario({"name": "fedar"}, {"kind": "bernoulli", "p": 0.5}), tmp_path / "c")
    assert [r["round"] for r in read_csv(run / "fedar_exclusions.csv")] == ["1", "2", "3", "4"]
