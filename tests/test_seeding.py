"""StreamFamily builds the very Generator that ``stream`` builds (it only computes numpy's
SeedSequence states for many ids at once), so swapping one for the other changes no number."""

from __future__ import annotations

import numpy as np
import pytest

from asyncfl.seeding import LazyStream, StreamFamily, seed_states, stream


@pytest.mark.parametrize("seed", [0, 1, 7, 2**31 + 5, 2**32, 2**40 + 3, 2**70 + 11])
def test_seed_states_are_numpys_seed_sequence(seed):
    rng = np.random.default_rng(seed % 1000)
    ids = np.concatenate([[0, 1, 2**32 - 1], rng.integers(0, 2**32, size=50)]).astype(np.uint64)
    for key in ([seed], [seed, 3, 1], [seed, 2, 2, 99], [seed, 6, 3, 2**33, 5, 0]):
        got = seed_states(key, ids)
        want = [np.random.SeedSequence([*key, int(i)]).generate_state(4, np.uint64) for i in ids]
        assert np.array_equal(got, np.stack(want))


@pytest.mark.parametrize("purpose", ["jitter", "availability"])
@pytest.mark.parametrize("seed", [0, 3, 2**45 + 1])
def test_family_members_draw_what_stream_draws(seed, purpose):
    family = StreamFamily(seed, purpose)
    block = StreamFamily.BLOCK
    rng = np.random.default_rng(seed % 97)
    ids = [0, 1, block - 1, block, block + 1, 3 * block + 17, 2**32 - 1, 2**32, 2**40]
    ids += rng.integers(0, 10**6, size=20).tolist()
    for i in rng.permutation(ids).tolist():  # blocks are computed in any order
        mine, theirs = family(i), stream(seed, purpose, i)
        assert np.array_equal(mine.random(300), theirs.random(300))
        assert np.array_equal(mine.standard_normal(50), theirs.standard_normal(50))
        lazy = family.lazy(i)
        assert isinstance(lazy, LazyStream)
        assert np.array_equal(lazy.exponential(2.0, size=10), stream(seed, purpose, i).exponential(2.0, size=10))


def test_negative_seed_is_refused_as_before():
    with pytest.raises(ValueError):
        StreamFamily(-1, "jitter")(3)


def test_streams_built_at_once_are_the_streams_built_one_by_one():
    """seeding.streams (a batched trainer's cohort of minibatch streams) hands out the very Generators that
    stream() builds, ids at the 32-bit edge and a seed above 2**32 included; out of that range it falls back."""
    import numpy as np

    from asyncfl.seeding import stream, streams

    ids = np.array([[0, 0], [5, 3], [99, 1000], [2**32 - 1, 7], [1, 0], [0, 1]])
    for seed in (0, 7, 2**40):
        built = streams(seed, "minibatch", ids)
        for row, rng in zip(ids, built):
            assert np.array_equal(rng.permutation(50), stream(seed, "minibatch", *map(int, row)).permutation(50))
    wide = np.array([[2**32, 1]])
    assert np.array_equal(streams(3, "minibatch", wide)[0].random(4), stream(3, "minibatch", 2**32, 1).random(4))
