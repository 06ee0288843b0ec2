"""Many clients' streams drawn at once (asyncfl/sim/stream_columns.py) are numpy's own, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from asyncfl.seeding import PURPOSES, seed_states, stream
from asyncfl.sim.stream_columns import BLOCK, MULTIPLIER, bernoulli_draws, raw_draws

MASK64, MASK128 = 2**64 - 1, 2**128 - 1


def _pcg64_by_hand(words: list[int], count: int) -> list[int]:
    """PCG64 with Python integers (pcg64.h): inc = initseq << 1 | 1; state = 0; step; state += initstate;
    step; then each output is one step and XSL-RR of the new state."""
    initstate, initseq = (words[0] << 64) | words[1], (words[2] << 64) | words[3]
    inc = ((initseq << 1) | 1) & MASK128
    state = inc  # 0 * MULTIPLIER + inc
    state = (state + initstate) & MASK128
    state = (state * MULTIPLIER + inc) & MASK128
    out = []
    for _ in range(count):
        state = (state * MULTIPLIER + inc) & MASK128
        hi, lo = state >> 64, state & MASK64
        x, rot = hi ^ lo, hi >> 58
        out.append(((x >> rot) | (x << ((64 - rot) & 63))) & MASK64)
    return out


def test_raw_draws_follow_the_128_bit_recurrence_written_out_by_hand() -> None:
    ids = np.array([0, 1, 4095, 4096, 123_456], dtype=np.uint64)
    states = seed_states([5, PURPOSES["availability"], 1], ids)
    got = raw_draws(states, 7)
    for row, words in zip(got, states.tolist()):
        assert row.tolist() == _pcg64_by_hand(words, 7)


@pytest.mark.parametrize("seed", [0, 3, 2**40])
def test_raw_draws_are_numpys_pcg64_outputs(seed: int) -> None:
    ids = np.arange(0, 40, dtype=np.uint64) * 1009  # spread over several seed-state blocks
    got = raw_draws(seed_states([seed, PURPOSES["jitter"], 1], ids), 300)
    for i, row in zip(ids.tolist(), got):
        assert (stream(seed, "jitter", i).bit_generator.random_raw(300) == row).all()


def test_bernoulli_draws_are_the_streams_uniforms_below_p() -> None:
    n = BLOCK + 5  # two blocks
    ids = np.arange(n)
    p = np.random.default_rng(0).uniform(0, 1, n)
    p[:3] = [1.0, 0.5, 2.0**-53]  # always; the threshold 2**52 exactly; only a zero draw
    got = bernoulli_draws(11, "availability", ids, p, 40)
    for i in [0, 1, 2, 3, 100, BLOCK - 1, BLOCK, n - 1]:
        assert (got[i] == (stream(11, "availability", i).random(40) < p[i])).all()
    assert got[0].all()  # random() < 1 always
    # statistical: P(online) = p_i, so the share online over 65,541 x 40 draws is mean(p) (sd about 0.0003)
    assert abs(got[3:].mean() - p[3:].mean()) < 0.003
