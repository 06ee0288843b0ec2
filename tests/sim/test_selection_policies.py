"""Oort, power-of-choice (rpow-d) and TiFL built directly (no registry, no server) on hand-made
feedback, checked against values computed by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from pydantic import ValidationError

from asyncfl.sim.selection import oort, power_of_choice, tifl
from asyncfl.sim.selection.base import ClientFeedback, SelectionRequest

NAN = math.nan


def clients(speeds):
    """Stand-ins for the timing world's devices: policies read only ``profile.samples_per_s``."""
    return [SimpleNamespace(profile=SimpleNamespace(samples_per_s=float(s))) for s in speeds]


def feedback(n, **columns):
    fb = ClientFeedback.empty(n)
    for name, values in columns.items():
        integer = name in ("last_version", "timed_out_version")
        setattr(fb, name, np.asarray(values, dtype=np.int64 if integer else np.float64))
    fb.filled = True
    return fb


def request(fb, candidates, count, rnd=4, speeds=None, seed=0):
    speeds = [100.0] * len(fb.loss) if speeds is None else speeds
    return SelectionRequest(
        version=rnd,
        now=0.0,
        candidates=np.asarray(candidates, dtype=np.int64),
        count=count,
        rng=np.random.default_rng(seed),
        clients=clients(speeds),
        feedback=fb,
    )


def build(module, **keys):
    kind = module.KIND
    return kind.build(kind.section(kind=kind.name, **keys), 12, 0)


# ---------------------------------------------------------------- Oort


def oort_feedback(n=4):
    """4 explored clients (0-3); clients >= 4 have reported nothing."""
    pad = [NAN] * (n - 4)
    return feedback(
        n,
        samples=[100, 50, 300, 10] + [20] * (n - 4),
        loss_sq=[4, 9, 1, 100] + pad,
        last_version=[3, 1, 2, 0] + [-1] * (n - 4),
        duration_s=[1, 2, 8, 4] + pad,
    )


# U = samples * sqrt(loss_sq) = 200, 150, 300, 100; clipped at the 95% value (index min(int(3.8), 3) = 3:
# 300, no clip) and scaled by it: 2/3, 1/2, 1, 1/3.  Round 4: R = 5; L = last_version + 1 = 4, 2, 3, 1.
# T = 4 s, alpha = 2: only client 2 (8 s > 4 s) is penalised, by (4/8)^2 = 1/4; client 3 (exactly 4 s) is not.
OORT_UTIL = [
    200 / 300 + math.sqrt(0.1 * math.log(5) / 4),  # 0.867256
    150 / 300 + math.sqrt(0.1 * math.log(5) / 2),  # 0.783676
    (300 / 300 + math.sqrt(0.1 * math.log(5) / 3)) * (4 / 8) ** 2,  # 0.307905
    100 / 300 + math.sqrt(0.1 * math.log(5) / 1),  # 0.734511
]


def test_oort_utility_is_statistical_plus_staleness_times_system_penalty():
    policy = build(oort, preferred_duration_s=4.0, alpha=2.0)
    util = policy.utilities(request(oort_feedback(), range(4), 2), np.arange(4))
    assert util == pytest.approx(OORT_UTIL, rel=1e-12)
    assert util == pytest.approx([0.867256, 0.783676, 0.307905, 0.734511], abs=1e-6)


def test_oort_counts_a_straggler_as_explored_with_the_mean_utility_and_its_seen_duration():
    """FedScale's aggregator registers a straggler (cut by the deadline) with the round's mean reward and
    its duration: client 4 timed out in round 2 after 12 s. Its U is the mean of 200, 150, 300, 100 = 187.5
    (scaled by the clip value 300: 0.625), L = 2 + 1 = 3, and (4/12)^2 penalises it for the 12 s."""
    fb = oort_feedback(5)
    fb.timed_out_version[4] = 2
    fb.duration_s[4] = 12.0
    policy = build(oort, preferred_duration_s=4.0, alpha=2.0)
    util = policy.utilities(request(fb, range(5), 2), np.arange(5))
    assert util[:4] == pytest.approx(OORT_UTIL, rel=1e-12)
    assert util[4] == pytest.approx((187.5 / 300 + math.sqrt(0.1 * math.log(5) / 3)) * (4 / 12) ** 2, rel=1e-12)
    # explored, so never drawn as an unheard client: with all of eps's slots for exploration (eps = 1) and
    # no unheard candidate, the slots go to explored clients by Util, 4 (0.0940) last
    policy = build(oort, preferred_duration_s=4.0, exploration=1.0, exploration_min=1.0, exploration_decay=1.0)
    assert policy.select(request(fb, range(5), 4)) == [0, 1, 2, 3]


def test_oort_penalty_only_for_clients_slower_than_T():
    policy = build(oort, preferred_duration_s=5.0, alpha=2.0)
    req = request(oort_feedback(), range(4), 2)
    assert policy.penalty(req, np.array([1.0, 4.0, 5.0, 10.0])).tolist() == [1.0, 1.0, 1.0, 0.25]
    # T from the reported durations: their 30th percentile by default; here the median of 1, 2, 4, 8 = 3
    policy = build(oort, duration_percentile=50.0, alpha=2.0)
    assert policy.preferred_duration(req) == 3.0
    assert policy.penalty(req, np.array([2.0, 3.0, 4.0, 8.0])).tolist() == [1.0, 1.0, (3 / 4) ** 2, (3 / 8) ** 2]
    # nobody has reported a duration: no penalty
    assert build(oort).preferred_duration(request(feedback(2), [0, 1], 1)) == math.inf


def test_oort_exploits_the_top_utilities_and_explores_the_unheard():
    # eps = max(0.5 * 1, 0.5) = 0.5: int(4 * 0.5) = 2 exploited; the 2nd highest Util is 0.783676 (client 1),
    # the cut 0.95 * 0.783676 = 0.744 leaves client 3 (0.7345) out, so the pool is exactly {0, 1};
    # the other 2 slots go to the unheard clients 4 and 5
    policy = build(oort, preferred_duration_s=4.0, exploration=0.5, exploration_min=0.5, exploration_decay=1.0)
    assert policy.select(request(oort_feedback(6), range(6), 4)) == [0, 1, 4, 5]
    # only one unheard candidate: the free slot goes to the next explored client by Util (3, then 2)
    assert policy.select(request(oort_feedback(6), range(5), 4)) == [0, 1, 3, 4]


def test_oort_samples_the_cut_off_pool_by_utility_and_unheard_by_speed():
    # cut_off 0.9: cut = 0.9 * 0.783676 = 0.7053, so client 3 (0.7345) joins the pool {0, 1, 3}
    policy = build(
        oort, preferred_duration_s=4.0, exploration=0.5, exploration_min=0.5, exploration_decay=1.0, cut_off=0.9
    )
    speeds = [1, 1, 1, 1, 10, 30, 60]
    got = policy.select(request(oort_feedback(7), range(7), 4, speeds=speeds))
    rng = np.random.default_rng(0)  # the same calls: 2 of the pool by Util, then 2 of {4, 5, 6} by speed
    pool = np.array([0, 1, 3])  # positions in the explored array [0, 1, 2, 3], by Util descending
    util = np.array(OORT_UTIL)[pool]
    exploited = rng.choice(pool, size=2, replace=False, p=util / util.sum())
    explored = rng.choice(np.array([4, 5, 6]), size=2, replace=False, p=np.array([10, 30, 60]) / 100)
    assert got == sorted(exploited.tolist() + explored.tolist())


def test_oort_explores_faster_unheard_clients_more_often():
    # eps 0.5, count 2: one exploited (client 0), one explored among 4 (1 sample/s) and 5 (99 samples/s)
    policy = build(oort, preferred_duration_s=4.0, exploration=0.5, exploration_min=0.5, exploration_decay=1.0)
    fb, speeds = oort_feedback(6), [1, 1, 1, 1, 1, 99]
    picks = [policy.select(request(fb, range(6), 2, speeds=speeds, seed=s)) for s in range(200)]
    assert all(p[0] == 0 for p in picks)
    assert sum(p[1] == 5 for p in picks) >= 185  # expected 198


def test_oort_cut_off_pool_admits_close_utilities_only():
    # no exploration: both slots exploited among explored 0-3 (Util 0.867, 0.784, 0.308, 0.735)
    def exploited(cut_off, seed):
        policy = build(oort, preferred_duration_s=4.0, exploration=0.0, exploration_min=0.0, cut_off=cut_off)
        return policy.select(request(oort_feedback(), range(4), 2, seed=seed))

    # cut 0.95 x 0.784 = 0.744: the pool is {0, 1}, always both
    assert all(exploited(0.95, s) == [0, 1] for s in range(50))
    # cut 0.9 x 0.784 = 0.705: client 3 (0.735) joins the pool and is drawn about 2/3 of the time
    picks = [exploited(0.9, s) for s in range(200)]
    assert 90 <= sum(3 in p for p in picks) <= 170
    assert not any(2 in p for p in picks)  # client 2 (0.308) is below the cut


def test_oort_clips_statistical_utility_at_its_95th_percentile():
    # 21 explored clients with U = k (samples k, loss_sq 1), k = 1..21: the clip value is the
    # sorted U at index int(21 * 0.95) = 19, i.e. 20; round 0 has no staleness bonus (log 1 = 0)
    n = 21
    fb = feedback(n, samples=range(1, n + 1), loss_sq=[1] * n, last_version=[0] * n, duration_s=[1] * n)
    util = build(oort).utilities(request(fb, range(n), 2, rnd=0), np.arange(n))
    assert util.tolist() == pytest.approx([k / 20 for k in range(1, 20)] + [1.0, 1.0], rel=1e-12)


def test_oort_exploration_fraction_decays_to_its_floor():
    policy = build(oort)  # 0.9, x0.98 per selection, floor 0.3
    fb = oort_feedback(40)
    got = policy.select(request(fb, range(40), 10))
    assert policy.exploration == pytest.approx(0.9 * 0.98)
    # int(10 * (1 - 0.882)) = 1 exploited: client 0, the highest Util (T = 30th pct of 1,2,4,8 = 1.9 here)
    assert len(got) == 10 and 0 in got and sum(c < 4 for c in got) == 1
    for _ in range(100):
        policy.select(request(fb, range(40), 10))
    assert policy.exploration == 0.3


def pacer_state(history, exploited=(0, 1), percentile=30.0):
    return {
        "exploration": 0.0,
        "percentile": percentile,
        "exploited": list(exploited),
        "exploited_version": 4,
        "history": history,
    }


def test_oort_pacer_relaxes_T_when_exploited_utility_drops():
    fb = oort_feedback()
    fb.last_version[:2] = 4  # clients 0 and 1, exploited in round 4, were aggregated in round 4
    req = request(fb, range(4), 2, rnd=5)
    policy = build(oort, pacer_step=1, pacer_delta=10.0, exploration=0.0, exploration_min=0.0)
    # round 4's exploited utility: U0 + U1 = 100 * sqrt(4) + 50 * sqrt(9) = 350, above round 3's 300: T stays
    vars(policy).update(pacer_state([300.0]))
    policy.pace(req)
    assert {key: vars(policy)[key] for key in pacer_state([])} | {"exploited": None} == pacer_state([300.0, 350.0]) | {
        "exploited": None
    }
    # 350 below 400: the percentile grows by 10 and the windows start afresh
    vars(policy).update(pacer_state([400.0]))
    policy.pace(req)
    assert (policy.percentile, policy.history) == (40.0, [])
    # T = the 40th percentile of 1, 2, 4, 8: position 0.4 * 3 = 1.2, 2 + 0.2 * (4 - 2) = 2.4
    assert policy.preferred_duration(req) == pytest.approx(2.4)
    # a client whose update was not aggregated since (last_version 3 < 4) adds nothing: 200 < 300
    fb.last_version[1] = 3
    vars(policy).update(pacer_state([300.0]))
    policy.pace(req)
    assert policy.percentile == 40.0
    # never beyond 100
    vars(policy).update(pacer_state([400.0], percentile=95.0))
    fb.last_version[1] = 4
    policy.pace(req)
    assert policy.percentile == 100.0


def test_oort_pacer_compares_windows_of_W_rounds():
    fb = oort_feedback()
    fb.last_version[:2] = 4
    req = request(fb, range(4), 2, rnd=5)
    policy = build(oort, pacer_step=2, pacer_delta=5.0)
    # windows [400, 300] (700) then [300, 350] (650): a drop
    vars(policy).update(pacer_state([400.0, 300.0, 300.0]))
    policy.pace(req)
    assert (policy.percentile, policy.history) == (35.0, [])
    # [300, 300] (600) then [300, 350] (650): no drop; the last 2W = 4 rounds are kept
    vars(policy).update(pacer_state([300.0, 300.0, 300.0]))
    policy.pace(req)
    assert (policy.percentile, policy.history) == (30.0, [300.0, 300.0, 300.0, 350.0])
    # equal sums ([300, 350] then [300, 350]) are no drop
    vars(policy).update(pacer_state([300.0, 350.0, 300.0]))
    policy.pace(req)
    assert policy.percentile == 30.0


def test_oort_select_records_the_exploited_clients_for_the_pacer():
    # no exploration: both exploited; T = 30th percentile of 1, 2, 4, 8 = 1.9: Util 0.867, 0.707 (client 1
    # x (1.9/2)^2), 0.069, 0.166 -> {0, 1}
    policy = build(oort, exploration=0.0, exploration_min=0.0)
    assert policy.select(request(oort_feedback(), range(4), 2, rnd=7)) == [0, 1]
    assert (policy.exploited, policy.exploited_version) == ([0, 1], 7)
    # the next selection paces first: round 7's U0 + U1 = 350 (both aggregated in round 7) after 400
    policy = build(oort, exploration=0.0, exploration_min=0.0, pacer_step=1)
    vars(policy).update(pacer_state([400.0], exploited=()))
    fb = oort_feedback()
    policy.select(request(fb, range(4), 2, rnd=7))
    assert policy.percentile == 30.0
    fb.last_version[:2] = 7
    policy.select(request(fb, range(4), 2, rnd=8))
    assert policy.percentile == 35.0
    with pytest.raises(ValidationError, match="pacer_step"):
        oort.OortSelection(kind="oort", preferred_duration_s=3.0, pacer_step=5)


def test_oort_refuses_a_floor_above_the_start():
    with pytest.raises(ValidationError, match="exploration_min"):
        oort.OortSelection(kind="oort", exploration=0.2, exploration_min=0.5)


# ---------------------------------------------------------------- power of choice (rpow-d)


def test_power_of_choice_with_d_all_takes_the_highest_last_losses():
    fb = feedback(6, samples=[10] * 6, loss=[0.5, 2.0, NAN, 1.0, 3.0, 0.1])
    policy = build(power_of_choice, d=6)
    # never reported (client 2) ranks as +inf, then 3.0 (client 4), 2.0 (client 1)
    assert policy.select(request(fb, range(6), 2)) == [2, 4]
    assert policy.select(request(fb, range(6), 3)) == [1, 2, 4]
    assert policy.select(request(fb, [0, 3, 5], 1)) == [3]
    # ties (two never-reported clients, one slot) go to the lower id
    fb.loss[:] = [NAN, 1.0, NAN, 1.0, 1.0, 1.0]
    assert policy.select(request(fb, range(6), 1)) == [0]


def test_power_of_choice_ranks_the_sample_drawn_by_data_fraction():
    samples = [10, 20, 30, 40, 50, 60]
    loss = [0.9, 0.1, 0.5, 0.7, 0.3, 0.2]
    fb = feedback(6, samples=samples, loss=loss)
    got = build(power_of_choice, d=3).select(request(fb, range(6), 2))
    # the same call: 3 of 6 without replacement, p_k = samples_k / 210
    sampled = np.random.default_rng(0).choice(np.arange(6), size=3, replace=False, p=np.array(samples) / 210)
    assert got == sorted(sorted(sampled.tolist(), key=lambda c: -loss[c])[:2])
    assert set(got) <= set(sampled.tolist())


def test_power_of_choice_samples_in_proportion_to_data():
    # d below count is clamped to count: one client drawn with p = (1, 1, 1, 97) / 100
    fb = feedback(4, samples=[1, 1, 1, 97], loss=[1.0] * 4)
    policy = build(power_of_choice, d=1)
    picks = [policy.select(request(fb, range(4), 1, seed=s))[0] for s in range(200)]
    assert picks.count(3) >= 185  # expected 194
    # unknown sizes: uniform
    fb = feedback(4, loss=[1.0] * 4)
    picks = [policy.select(request(fb, range(4), 1, seed=s))[0] for s in range(200)]
    assert all(picks.count(c) >= 30 for c in range(4))


# ---------------------------------------------------------------- TiFL


def test_tifl_tiers_are_duration_quantiles():
    fb = feedback(10, duration_s=[5, 1, 9, 3, 7, 2, 8, 4, 6, 10])
    policy = build(tifl, tiers=3)
    # by time: 1(1 s) 5(2) 3(3) 7(4) | 0(5) 8(6) 4(7) | 6(8) 2(9) 9(10): 10 cut into 4 + 3 + 3
    groups = policy.tiers_of(request(fb, range(10), 2))
    assert [g.tolist() for g in groups] == [[1, 5, 3, 7], [0, 8, 4], [6, 2, 9]]


def test_tifl_estimates_unprofiled_clients_from_their_speed():
    # measured: duration * speed = 2 * 50 = 100, 4 * 50 = 200, 12 * 50 = 600, median 200 s x samples/s;
    # unprofiled: 200 / 100 = 2 s and 200 / 40 = 5 s
    fb = feedback(5, duration_s=[2, 4, 12, NAN, NAN])
    req = request(fb, range(5), 2, speeds=[50, 50, 50, 100, 40])
    assert tifl.task_times(req, np.arange(5)).tolist() == [2.0, 4.0, 12.0, 2.0, 5.0]
    # by time (ties by id): 0(2 s) 3(2 s) 1(4 s) | 4(5 s) 2(12 s)
    assert [g.tolist() for g in build(tifl, tiers=2).tiers_of(req)] == [[0, 3, 1], [4, 2]]
    # nobody measured: 1 / speed orders them
    req = request(feedback(3), range(3), 1, speeds=[10, 40, 20])
    assert tifl.task_times(req, np.arange(3)).tolist() == [0.1, 0.025, 0.05]


def test_tifl_change_probabilities_favour_the_least_accurate_tier():
    # n = 3, D = 6: ascending accuracy tier 1 (0.5) 3/6, tier 0 (0.8) 2/6, tier 2 (0.9) 1/6
    assert tifl.change_probabilities([0.8, 0.5, 0.9], [1, 1, 1]) == [2 / 6, 3 / 6, 1 / 6]
    # tier 1 out of credits: n = 2, D = 3
    assert tifl.change_probabilities([0.8, 0.5, 0.9], [1, 0, 1]) == [2 / 3, 0.0, 1 / 3]
    # a tier never evaluated ranks as the least accurate
    assert tifl.change_probabilities([NAN, 0.5, 0.9], [1, 1, 1]) == [3 / 6, 2 / 6, 1 / 6]
    # no accuracy at all: uniform over the tiers with credits
    assert tifl.change_probabilities([NAN, NAN, NAN], [1, 0, 1]) == [0.5, 0.0, 0.5]


def test_tifl_credits_cap_each_tier_and_are_refilled_when_all_are_spent():
    fb = feedback(8, duration_s=[1, 2, 3, 4, 5, 6, 7, 8])
    policy = build(tifl, tiers=2, credits=3, interval=100)
    chosen = []
    for rnd in range(6):
        got = policy.select(request(fb, range(8), 2, rnd=rnd, seed=rnd))
        tier = 0 if max(got) <= 3 else 1
        assert all((c <= 3) == (tier == 0) for c in got)  # one tier per round
        chosen.append(tier)
    # 3 credits each: 6 rounds pick each tier exactly 3 times, an exhausted tier never again
    assert chosen.count(0) == 3 and chosen.count(1) == 3
    assert policy.credits == [0, 0]
    policy.select(request(fb, range(8), 2, rnd=6))
    assert sorted(policy.credits) == [2, 3]  # refilled, then one spent

    vars(policy).update({"probabilities": [0.2, 0.8], "credits": [0, 0], "selections": 1})
    policy.select(request(fb, range(8), 2))
    assert policy.probabilities == [0.5, 0.5]  # the refill restarts them uniform

    vars(policy).update({"probabilities": [0.5, 0.5], "credits": [0, 4], "selections": 1})
    for seed in range(4):
        assert min(policy.select(request(fb, range(8), 2, seed=seed))) >= 4  # tier 0 is exhausted
    assert policy.credits == [0, 0]


def test_tifl_lower_accuracy_tier_gets_higher_probability_after_an_update():
    fb = feedback(6, duration_s=[1, 2, 3, 10, 20, 30], accuracy=[0.9, 0.8, NAN, 0.3, 0.4, 0.2])
    policy = build(tifl, tiers=2, interval=1, credits=10)
    policy.select(request(fb, range(6), 2, rnd=0))
    assert policy.probabilities == [0.5, 0.5]
    policy.select(request(fb, range(6), 2, rnd=1))
    # tier 0 {0, 1, 2}: mean 0.85; tier 1 {3, 4, 5}: mean 0.3 -> tier 1 gets 2/3, tier 0 1/3
    assert policy.probabilities == [1 / 3, 2 / 3]


def test_tifl_a_small_tier_gives_all_its_clients():
    fb = feedback(4, duration_s=[1, 2, 3, 4])
    got = build(tifl, tiers=2).select(request(fb, range(4), 3))
    assert got in ([0, 1], [2, 3])  # 2 clients, fewer than count: the whole tier
    # no count (ask everyone): every candidate, no credit spent
    policy = build(tifl, tiers=2, credits=5)
    assert policy.select(request(fb, [0, 2, 3], None)) == [0, 2, 3]
    assert policy.credits == [5, 5]


# ---------------------------------------------------------------- every policy


def rich_feedback(n=12):
    rng = np.random.default_rng(7)
    fb = feedback(
        n,
        samples=rng.integers(5, 50, n),
        loss=rng.uniform(0.1, 2, n),
        loss_sq=rng.uniform(0.1, 4, n),
        last_version=rng.integers(0, 3, n),
        duration_s=rng.uniform(1, 10, n),
        accuracy=rng.uniform(0, 1, n),
    )
    for column in (fb.loss, fb.loss_sq, fb.duration_s, fb.accuracy):
        column[[2, 9]] = NAN  # two clients never heard from
    fb.last_version[[2, 9]] = -1
    return fb


POLICIES = [
    (oort, {}),
    (oort, {"preferred_duration_s": 4.0, "exploration": 0.5}),
    (power_of_choice, {"d": 6}),
    (tifl, {"tiers": 3, "interval": 2, "credits": 2}),
]


@pytest.mark.parametrize(("module", "keys"), POLICIES)
def test_selections_are_sorted_unique_candidates(module, keys):
    policy, fb = build(module, **keys), rich_feedback()
    candidates = [0, 1, 2, 4, 5, 7, 8, 9, 10, 11]
    for rnd in range(8):
        got = policy.select(request(fb, candidates, 4, rnd=rnd, seed=rnd, speeds=range(1, 13)))
        assert got == sorted(set(got)) and set(got) <= set(candidates)
        assert 1 <= len(got) <= 4 and (len(got) == 4 or module is tifl)
        assert all(type(c) is int for c in got)


@pytest.mark.parametrize("module", [oort, power_of_choice, tifl])
def test_kinds_declare_losses_sync_and_valid_examples(module):
    kind = module.KIND
    assert kind.tags.needs_losses and kind.tags.modes == frozenset({"sync"}) and len(kind.examples) >= 2
    for _, spec in kind.examples:
        kind.section(**spec)
    for name, field in kind.section.model_fields.items():
        assert name == "kind" or field.description
