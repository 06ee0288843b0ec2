"""Partitioners: exact coverage, no empty client, the skew each scheme promises, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from asyncfl.config.schema import Data
from asyncfl.errors import ConfigError
from asyncfl.learn.partition import cluster_of_clients, partition, split_train_test

CLASSES = 10


def spec(**kw):
    """A validated partition spec, exactly as a scenario file would produce it."""
    return Data.model_validate({"partition": kw}).partition


def make_labels(n: int = 2000, seed: int = 0) -> np.ndarray:
    """Unequal class sizes (like real data), shuffled."""
    rng = np.random.default_rng(seed)
    return rng.choice(CLASSES, size=n, p=np.linspace(1, 2, CLASSES) / np.linspace(1, 2, CLASSES).sum())


def label_sets(labels: np.ndarray, parts: list[np.ndarray]) -> list[set[int]]:
    return [set(np.unique(labels[p]).tolist()) for p in parts]


def mean_entropy(labels: np.ndarray, parts: list[np.ndarray]) -> float:
    out = []
    for p in parts:
        h = np.bincount(labels[p], minlength=CLASSES) / len(p)
        h = h[h > 0]
        out.append(-(h * np.log(h)).sum())
    return float(np.mean(out))


SPECS = [
    {"kind": "iid"},
    {"kind": "dirichlet", "alpha": 0.05},
    {"kind": "dirichlet", "alpha": 10.0},
    {"kind": "classes", "per_client": 2},
    {"kind": "classes", "per_client": 1},
    {"kind": "clusters", "clusters": 3},
    {"kind": "clusters", "clusters": 13},
    {"kind": "isolated_class", "label": 3, "clients": 1},
]


# More clusters than clients is an error (tested below), so those pairs are not in this grid.
COVER_CASES = [
    pytest.param(kw, clients, id=f"{clients}-" + "-".join(map(str, kw.values())))
    for clients in (1, 7, 20, 100)
    for kw in SPECS
    if kw.get("clusters", 0) <= clients
]


@pytest.mark.parametrize("kw, clients", COVER_CASES)
def test_covers_pool_exactly_once_and_nobody_is_empty(kw, clients):
    labels = make_labels()
    parts = partition(labels, clients, spec(**kw), np.random.default_rng(1))
    assert len(parts) == clients
    assert all(len(p) >= 1 for p in parts)
    assert all(p.dtype == np.int64 for p in parts)
    everything = np.concatenate(parts)
    assert len(everything) == len(labels)  # no overlap ...
    np.testing.assert_array_equal(np.sort(everything), np.arange(len(labels)))  # ... and full cover


def test_iid_sizes_are_balanced():
    parts = partition(make_labels(2003), 10, spec(kind="iid"), np.random.default_rng(0))
    assert sorted(len(p) for p in parts) == [200] * 7 + [201] * 3


def test_dirichlet_small_alpha_is_more_skewed_than_iid():
    labels = make_labels()
    rng = np.random.default_rng(3)
    iid = mean_entropy(labels, partition(labels, 20, spec(kind="iid"), rng))
    skewed = mean_entropy(labels, partition(labels, 20, spec(kind="dirichlet", alpha=0.1), rng))
    mild = mean_entropy(labels, partition(labels, 20, spec(kind="dirichlet", alpha=100.0), rng))
    assert iid > 0.95 * np.log(CLASSES)
    assert skewed < 0.6 * iid
    assert mild > 0.95 * iid  # large alpha approaches iid


def test_dirichlet_tiny_alpha_many_clients_still_fills_everyone():
    labels = make_labels(300)
    parts = partition(labels, 150, spec(kind="dirichlet", alpha=0.001), np.random.default_rng(0))
    assert min(len(p) for p in parts) >= 1
    assert sum(len(p) for p in parts) == 300


@pytest.mark.parametrize(("clients", "per_client"), [(20, 2), (10, 3), (50, 2), (7, 2), (5, 10)])
def test_classes_gives_each_client_exactly_per_client_labels(clients, per_client):
    labels = make_labels()
    parts = partition(labels, clients, spec(kind="classes", per_client=per_client), np.random.default_rng(2))
    assert [len(s) for s in label_sets(labels, parts)] == [per_client] * clients
    # Shards are near-equal: no client holds more than ~2x another's share.
    sizes = [len(p) for p in parts]
    assert max(sizes) < 2.5 * min(sizes)


def test_classes_more_per_client_than_classes_is_a_config_error():
    with pytest.raises(ConfigError, match=r"data\.partition\.per_client \(11\)"):
        partition(make_labels(), 5, spec(kind="classes", per_client=11), np.random.default_rng(0))


def test_classes_with_fewer_shards_than_classes_still_covers():
    labels = make_labels()
    parts = partition(labels, 3, spec(kind="classes", per_client=2), np.random.default_rng(0))
    assert sum(len(p) for p in parts) == len(labels)
    # 6 label-sorted shards over 10 classes: a shard spans at most 3 classes, a client holds two.
    assert all(2 <= len(s) <= 6 for s in label_sets(labels, parts))


def test_clusters_share_labels_within_and_are_disjoint_across():
    labels = make_labels()
    clients, clusters = 12, 3
    parts = partition(labels, clients, spec(kind="clusters", clusters=clusters), np.random.default_rng(0))
    cluster = cluster_of_clients(clients, clusters)
    np.testing.assert_array_equal(cluster, np.repeat([0, 1, 2], 4))
    sets = label_sets(labels, parts)
    groups = []
    for g in range(clusters):
        members = [sets[k] for k in np.flatnonzero(cluster == g)]
        assert all(m == members[0] for m in members)  # one cluster, one label set
        groups.append(members[0])
    assert groups == [{0, 3, 6, 9}, {1, 4, 7}, {2, 5, 8}]  # round-robin deal of the classes
    for a in range(clusters):
        for b in range(a + 1, clusters):
            assert not groups[a] & groups[b]


def test_clusters_more_than_classes_reuse_label_groups():
    labels = make_labels()
    parts = partition(labels, 26, spec(kind="clusters", clusters=13), np.random.default_rng(0))
    cluster = cluster_of_clients(26, 13)
    sets = label_sets(labels, parts)
    assert [len(s) for s in sets] == [1] * 26
    assert sets[np.flatnonzero(cluster == 10)[0]] == sets[np.flatnonzero(cluster == 0)[0]] == {0}


def test_clusters_more_than_clients_is_a_config_error():
    with pytest.raises(ConfigError, match=r"data\.partition\.clusters \(5\).*data\.clients \(4\)"):
        partition(make_labels(), 4, spec(kind="clusters", clusters=5), np.random.default_rng(0))


def test_more_clients_than_samples_is_a_config_error_naming_data_clients():
    with pytest.raises(ConfigError, match=r"data\.clients \(11\).*10 samples"):
        partition(make_labels(10), 11, spec(kind="iid"), np.random.default_rng(0))


@pytest.mark.parametrize("kw", SPECS[:6], ids=lambda kw: "-".join(map(str, kw.values())))
def test_same_seed_same_partition_other_seed_other_partition(kw):
    labels = make_labels()
    a = partition(labels, 10, spec(**kw), np.random.default_rng(np.random.SeedSequence([5, 1])))
    b = partition(labels, 10, spec(**kw), np.random.default_rng(np.random.SeedSequence([5, 1])))
    c = partition(labels, 10, spec(**kw), np.random.default_rng(np.random.SeedSequence([6, 1])))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


@pytest.mark.parametrize(
    ("n", "fraction", "n_test"),
    [(100, 0.2, 20), (10, 0.25, 2), (10, 0.01, 1), (2, 0.9, 1), (1, 0.5, 0), (0, 0.5, 0), (50, 0.0, 0)],
)
def test_split_train_test_sizes(n, fraction, n_test):
    idx = np.arange(1000, 1000 + n)
    train, test = split_train_test(idx, fraction, np.random.default_rng(0))
    assert len(test) == n_test
    assert len(train) == n - n_test
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), idx)


def test_split_train_test_is_random_but_seeded():
    idx = np.arange(100)
    a = split_train_test(idx, 0.3, np.random.default_rng(1))
    b = split_train_test(idx, 0.3, np.random.default_rng(1))
    c = split_train_test(idx, 0.3, np.random.default_rng(2))
    assert np.array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])
    assert not np.array_equal(a[1], np.arange(70, 100))  # not just the tail


@pytest.mark.parametrize(
    "base", [{"kind": "iid"}, {"kind": "dirichlet", "alpha": 0.3}, {"kind": "classes", "per_client": 2}]
)
def test_isolated_class_lives_only_on_the_first_clients(base):
    labels = make_labels()
    kw = {"kind": "isolated_class", "label": 9, "clients": 3, "base": base}
    parts = partition(labels, 20, spec(**kw), np.random.default_rng(4))
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(len(labels)))  # exact cover
    counts = [int((labels[p] == 9).sum()) for p in parts]
    assert all(c > 0 for c in counts[:3]) and all(c == 0 for c in counts[3:])
    assert sum(counts) == int((labels == 9).sum())
    assert max(counts[:3]) - min(counts[:3]) <= 1  # dealt evenly
    assert all(len(p) >= 1 for p in parts)


def test_isolated_class_errors_name_the_key():
    labels = make_labels()
    with pytest.raises(ConfigError, match=r"data\.partition\.clients \(30\).*data\.clients \(20\)"):
        partition(labels, 20, spec(kind="isolated_class", label=9, clients=30), np.random.default_rng(0))
    with pytest.raises(
        ConfigError, match=r"data\.partition\.label \(12\) is not a class of the data set: allowed 0 to 9"
    ):
        partition(labels, 20, spec(kind="isolated_class", label=12, clients=2), np.random.default_rng(0))
