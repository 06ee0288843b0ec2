"""The first draws of many clients' own streams at once, as numpy columns.

A client's stream is ``stream(seed, purpose, i)`` (asyncfl.seeding): numpy's PCG64 seeded by a
SeedSequence.  :func:`asyncfl.seeding.seed_states` already computes the seed states of a block of
ids at once; here PCG64 itself runs for a block of clients at once (numpy's pcg64.h: a 128-bit LCG,
state = state * MULTIPLIER + inc, output XSL-RR), so a population's clients that never act need no
Generator each (tens of microseconds apiece, minutes at 10^7 clients) to say what their streams
would have drawn.  The numbers are numpy's, bit for bit (tests/sim/test_stream_columns.py).

128-bit words are (hi, lo) pairs of uint64 arrays; numpy's uint64 products wrap modulo 2**64.
"""

from __future__ import annotations

import numpy as np

from asyncfl.seeding import PURPOSES, seed_states

MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645  # PCG_DEFAULT_MULTIPLIER_128
_MUL_HI, _MUL_LO = np.uint64(MULTIPLIER >> 64), np.uint64(MULTIPLIER & (2**64 - 1))
_LO32 = np.uint64(0xFFFF_FFFF)
_B0, _B1 = _MUL_LO & _LO32, _MUL_LO >> np.uint64(32)  # the low word of the multiplier, in 32-bit halves
BLOCK = 1 << 16  # clients per pass: the working arrays stay in cache


def _mul_hi_by_mul_lo(a: np.ndarray) -> np.ndarray:
    """The high 64 bits of the 128-bit product ``a * _MUL_LO`` (schoolbook, 32-bit halves)."""
    a0, a1 = a & _LO32, a >> np.uint64(32)
    p00, p01, p10 = a0 * _B0, a0 * _B1, a1 * _B0
    mid = (p00 >> np.uint64(32)) + (p01 & _LO32) + (p10 & _LO32)
    return a1 * _B1 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))


def _step(hi: np.ndarray, lo: np.ndarray, inc_hi: np.ndarray, inc_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """state * MULTIPLIER + inc (mod 2**128)."""
    new_hi = hi * _MUL_LO + lo * _MUL_HI + _mul_hi_by_mul_lo(lo)
    new_lo = lo * _MUL_LO + inc_lo
    carry = (new_lo < inc_lo).astype(np.uint64)
    return new_hi + inc_hi + carry, new_lo


def _output(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """XSL-RR: rotate (hi ^ lo) right by the top 6 bits of the state."""
    x, rot = hi ^ lo, hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


class PCG64Columns:
    """PCG64 for many streams at once (one row of ``states`` each, [n, 4] uint64 as
    ``SeedSequence.generate_state(4, np.uint64)`` gives them), advanced one output at a time.
    Seeding is numpy's ``pcg_setseq_128_srandom_r``: inc = initseq << 1 | 1, state = 0, step,
    state += initstate, step."""

    def __init__(self, states: np.ndarray) -> None:
        s0, s1, s2, s3 = (np.ascontiguousarray(states[:, j]) for j in range(4))
        self.inc_hi = (s2 << np.uint64(1)) | (s3 >> np.uint64(63))
        self.inc_lo = (s3 << np.uint64(1)) | np.uint64(1)
        lo = self.inc_lo + s1  # state = inc (the first step from 0), plus initstate
        hi = self.inc_hi + s0 + (lo < s1).astype(np.uint64)
        self.hi, self.lo = _step(hi, lo, self.inc_hi, self.inc_lo)

    def __len__(self) -> int:
        return len(self.hi)

    def next_uint64(self) -> np.ndarray:
        """Every stream's next ``next_uint64`` output."""
        self.hi, self.lo = _step(self.hi, self.lo, self.inc_hi, self.inc_lo)
        return _output(self.hi, self.lo)

    def subset(self, rows: np.ndarray) -> PCG64Columns:
        """A copy of the streams ``rows``, at their current positions."""
        copy = PCG64Columns.__new__(PCG64Columns)
        copy.hi, copy.lo, copy.inc_hi, copy.inc_lo = self.hi[rows], self.lo[rows], self.inc_hi[rows], self.inc_lo[rows]
        return copy


def raw_draws(states: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` ``next_uint64`` outputs of PCG64 seeded with each row of ``states``: [n, count]."""
    streams = PCG64Columns(states)
    out = np.empty((len(states), count), dtype=np.uint64)
    for k in range(count):
        out[:, k] = streams.next_uint64()
    return out


def client_streams(seed: int, purpose: str, count: int) -> PCG64Columns:
    """``stream(seed, purpose, i)`` for i in 0..count-1, at their start."""
    key = [seed, PURPOSES[purpose], 1]  # stream()'s key for one id (StreamFamily.key)
    states = np.concatenate(
        [seed_states(key, np.arange(a, min(a + BLOCK, count), dtype=np.uint64)) for a in range(0, count, BLOCK)]
    )
    return PCG64Columns(states.reshape(count, 4))


def below(draws: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``random() < p`` for ``next_uint64`` outputs ``draws``: ``random()`` is ``(u >> 11) * 2**-53``, and
    for an integer k, k * 2**-53 < p exactly when k < ceil(p * 2**53) (a power-of-two scaling, exact)."""
    return (draws >> np.uint64(11)) < np.ceil(np.asarray(p, dtype=np.float64) * 2.0**53).astype(np.uint64)


def bernoulli_draws(seed: int, purpose: str, ids: np.ndarray, p: np.ndarray, count: int) -> np.ndarray:
    """``stream(seed, purpose, i).random(count) < p_i`` for every i of ``ids`` (p: one per id):
    [len(ids), count] bool (:func:`below`)."""
    key = [seed, PURPOSES[purpose], 1]  # stream()'s key for one id (StreamFamily.key)
    p = np.asarray(p, dtype=np.float64)
    out = np.empty((len(ids), count), dtype=bool)
    for start in range(0, len(ids), BLOCK):
        block = slice(start, start + BLOCK)
        draws = raw_draws(seed_states(key, np.asarray(ids[block], dtype=np.uint64)), count)
        out[block] = below(draws, p[block, None])
    return out
