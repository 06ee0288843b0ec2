"""Every random number in asyncfl comes from a stream keyed by (scenario seed, purpose, ids...).

Keying by purpose and id (client, round, attempt) means one consumer never shifts another's
numbers: a client's minibatches do not depend on who shares its batch, and adding a new random
feature does not change the results of old scenarios.  No global generator is ever touched.
"""

from __future__ import annotations

import numpy as np

PURPOSES = {
    "profiles": 1,  # device speeds, links, battery levels
    "availability": 2,  # one stream per client
    "jitter": 3,  # per-task compute jitter, one stream per client
    "selection": 4,  # sync client sampling, one stream per round
    "dispatch": 5,  # k_async choice of the next client
    "minibatch": 6,  # local SGD sample order, per (client, attempt)
    "model_init": 7,
    "phases": 8,  # cyclic phases, plug phases
    "timezones": 9,  # per-client UTC offsets (population.timezones)
    "compression": 10,  # training.compression's draws (qsgd), per (client, attempt)
    "flower": 11,  # a Flower run's id and the seed of the global generators its apps draw from (asyncfl.flower)
}


def seeded_rng(seed: int, tag: int) -> np.random.Generator:
    """The data world's streams, keyed by (seed, tag): a data set's own randomness (digits' hold-out
    11, synthetic 12), the partition (21) and the local train/test split (22).  A second scheme,
    older than :func:`stream`, kept because every data split of every existing scenario comes from
    it: moving these streams onto :func:`stream` would change them all.  A new data set picks an
    unused tag in its own module."""
    return np.random.default_rng(np.random.SeedSequence([seed, tag]))


def stream(seed: int, purpose: str, *ids: int) -> np.random.Generator:
    # The id count is part of the key: SeedSequence ignores trailing zeros, so without it
    # (seed, purpose) and (seed, purpose, 0) would be the same stream.
    return np.random.default_rng(np.random.SeedSequence([seed, PURPOSES[purpose], len(ids), *ids]))


class LazyStream:
    """``stream(seed, purpose, *ids)``, built on first use.  Building a Generator costs tens of
    microseconds, which the many clients of a large population that never act should not pay; the
    numbers are the same as the eager stream's.  :meth:`StreamFamily.lazy` makes one that is built
    by a family (the same Generator, built faster)."""

    __slots__ = ("_make", "_key", "_rng")

    def __init__(self, seed: int, purpose: str, *ids: int) -> None:
        self._make, self._key, self._rng = stream, (seed, purpose, *ids), None

    def __getattr__(self, name: str):  # reached only for the Generator's own attributes
        if self._rng is None:
            self._rng = self._make(*self._key)
        return getattr(self._rng, name)


# numpy's SeedSequence (numpy/random/bit_generator.pyx), for StreamFamily's vectorised copy of it
_MASK32 = 0xFFFF_FFFF
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R, _XSHIFT, _POOL_SIZE = 0xCA01F9DD, 0x4973F715, 16, 4


def _uint32_words(n: int) -> list[int]:
    """SeedSequence's ``_int_to_uint32_array``: n's 32-bit words, least significant first ([0] for 0)."""
    words = [n & _MASK32]
    while n >> 32:
        n >>= 32
        words.append(n & _MASK32)
    return words


def seed_states(key: list[int], last: np.ndarray) -> np.ndarray:
    """``SeedSequence(key + [i]).generate_state(4, np.uint64)`` for every i of ``last`` (each
    0 <= i < 2**32), computed for all of them at once: [len(last), 4] uint64.  The hash constants
    never depend on the data, so every step of numpy's scalar loop is one array operation here; the
    32-bit words are held in uint64 arrays and masked after each product (numbers < 2**64: exact)."""
    return _states([w for n in key for w in _uint32_words(n)] + [np.asarray(last, dtype=np.uint64)], len(last))


def _states(entropy: list, count: int) -> np.ndarray:
    """SeedSequence's pool mixing over ``entropy`` (32-bit words: ints, or uint64 arrays of ``count`` words
    each, one per seed), then ``generate_state(4, np.uint64)``: [count, 4] uint64."""
    hash_const = _INIT_A

    def hashmix(value):
        nonlocal hash_const
        value = value ^ hash_const
        hash_const = (hash_const * _MULT_A) & _MASK32
        value = (value * hash_const) & _MASK32
        return value ^ (value >> _XSHIFT)

    def mix(x, y):
        result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _MASK32  # Python ints or uint64 arrays (mod 2**64)
        return result ^ (result >> _XSHIFT)

    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(_POOL_SIZE)]
    for i_src in range(_POOL_SIZE):
        for i_dst in range(_POOL_SIZE):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hashmix(pool[i_src]))
    for i_src in range(_POOL_SIZE, len(entropy)):
        for i_dst in range(_POOL_SIZE):
            pool[i_dst] = mix(pool[i_dst], hashmix(entropy[i_src]))
    hash_const, words = _INIT_B, []
    for i_dst in range(2 * 4):  # generate_state(4, uint64): 8 words, read as little-endian pairs
        value = pool[i_dst % _POOL_SIZE] ^ hash_const
        hash_const = (hash_const * _MULT_B) & _MASK32
        value = (value * hash_const) & _MASK32
        words.append(value ^ (value >> _XSHIFT))
    out = np.empty((count, 4), dtype=np.uint64)
    for j in range(4):
        out[:, j] = words[2 * j] | (words[2 * j + 1] << np.uint64(32))
    return out


def streams(seed: int, purpose: str, ids: np.ndarray) -> list[np.random.Generator]:
    """``[stream(seed, purpose, *row) for row in ids]`` (``ids``: [n, k] integers), the seed states computed
    for all rows at once (:func:`_states`): the same Generators, built several times faster -- a batched
    trainer draws a stream per job of a cohort, thousands a second."""
    ids = np.asarray(ids, dtype=np.int64).reshape(len(ids), -1)
    if seed < 0 or ids.size == 0 or ids.min() < 0 or ids.max() >= 2**32:  # (SeedSequence's own refusals, or none)
        return [stream(seed, purpose, *map(int, row)) for row in ids]
    key = [w for n in (seed, PURPOSES[purpose], ids.shape[1]) for w in _uint32_words(n)]
    states = _states(key + [ids[:, i].astype(np.uint64) for i in range(ids.shape[1])], len(ids))
    return [np.random.Generator(np.random.PCG64(_SeedState(state))) for state in states]


class _SeedState(np.random.bit_generator.ISeedSequence):
    """A seed sequence whose state is already known (from :func:`seed_states`)."""

    __slots__ = ("state",)

    def __init__(self, state: np.ndarray) -> None:
        self.state = state

    def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
        if n_words != 4 or np.dtype(dtype) != np.uint64:  # PCG64 asks for exactly this
            raise ValueError("_SeedState holds the 4 uint64 words PCG64 asks for, nothing else")
        return self.state


class StreamFamily:
    """``stream(seed, purpose, i)`` for the ids i of a population, built about ten times faster: the
    SeedSequence states are computed for a block of ids at once (:func:`seed_states`) and handed
    to PCG64, which is what ``np.random.default_rng(SeedSequence(...))`` builds.  The same
    Generator, so the same numbers (tests/test_seeding.py); at 10^5-10^6 clients each building a
    stream or two, numpy's own SeedSequence was a large share of a timing-only run."""

    BLOCK = 4096

    def __init__(self, seed: int, purpose: str) -> None:
        self.seed, self.purpose = seed, purpose
        self.key = [seed, PURPOSES[purpose], 1]  # stream()'s key for one id
        self.blocks: dict[int, np.ndarray] = {}

    def __call__(self, i: int) -> np.random.Generator:
        if not 0 <= i < 2**32 or self.seed < 0:  # (a negative seed: let SeedSequence refuse it)
            return stream(self.seed, self.purpose, i)
        block, offset = divmod(i, self.BLOCK)
        states = self.blocks.get(block)
        if states is None:
            ids = np.arange(block * self.BLOCK, min((block + 1) * self.BLOCK, 2**32), dtype=np.uint64)
            states = self.blocks[block] = seed_states(self.key, ids)
        return np.random.Generator(np.random.PCG64(_SeedState(states[offset])))

    def lazy(self, i: int) -> LazyStream:
        """:class:`LazyStream` of ``stream(seed, purpose, i)``, built by this family on first use."""
        rng = LazyStream.__new__(LazyStream)
        rng._make, rng._key, rng._rng = self, (i,), None
        return rng
