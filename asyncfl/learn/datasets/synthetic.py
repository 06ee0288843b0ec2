"""``synthetic``: FedProx's Synthetic(alpha, beta) (Li et al. 2020, "Federated Optimization in
Heterogeneous Networks", section 5.1), with a natural client for every sample."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.learn.datasets._base import DataSet, RawData
from asyncfl.learn.partition import split_train_test
from asyncfl.sections import Distribution, Section
from asyncfl.seeding import seeded_rng

# Fixed tag keying the generator's random stream off the scenario seed.  Never renumber it.
TAG_SYNTHETIC = 12


class Synthetic(Section):
    """FedProx Synthetic(alpha, beta): alpha = model heterogeneity, beta = data heterogeneity."""

    alpha: float = Field(default=1.0, ge=0)
    beta: float = Field(default=1.0, ge=0)
    dimension: int = Field(default=60, ge=1)
    classes: int = Field(default=10, ge=2)
    samples_per_client: Distribution = Field(
        default_factory=lambda: {"dist": "lognormal", "median": 100, "sigma": 0.5},
        description="training+test samples per client",
    )


def load(data: Any, seed: int) -> RawData:
    """FedProx Synthetic(alpha, beta); each client's samples split by ``data.test_fraction``.

    Following the FedProx generator, alpha and beta are the standard deviations of u_k and B_k.
    """
    check(data)
    cfg = data.synthetic
    rng = seeded_rng(seed, TAG_SYNTHETIC)
    sizes = np.maximum(2, np.rint(cfg.samples_per_client.sample(rng, data.clients))).astype(int)
    x_std = np.arange(1, cfg.dimension + 1, dtype=float) ** -0.6  # Sigma_jj = j^-1.2
    u = rng.normal(0.0, cfg.alpha, data.clients)
    big_b = rng.normal(0.0, cfg.beta, data.clients)
    train: list[tuple[np.ndarray, np.ndarray, int]] = []
    test: list[tuple[np.ndarray, np.ndarray, int]] = []
    for k, n in enumerate(sizes):
        x, y = _client(rng, u[k], big_b[k], x_std, cfg.classes, int(n))
        tr, te = split_train_test(np.arange(n), data.test_fraction, rng)
        train.append((x[tr], y[tr], k))
        test.append((x[te], y[te], k))
    x_tr, y_tr, c_tr = _stack(train)
    x_te, y_te, c_te = _stack(test)
    return RawData(x_tr, y_tr, x_te, y_te, cfg.classes, c_tr, c_te)


def check(data: Any) -> None:
    """The global test set is made of the clients' local test splits, so they must not be empty."""
    if data.test_fraction <= 0:
        raise ConfigError(
            "data.dataset synthetic builds its global test set from the clients' local test splits, "
            "so data.test_fraction must be greater than 0"
        )


def _client(
    rng: np.random.Generator, u: float, big_b: float, x_std: np.ndarray, classes: int, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """One client: W ~ N(u, 1), b ~ N(u, 1), v ~ N(B, 1), x ~ N(v, Sigma), y = argmax(W x + b)."""
    dim = len(x_std)
    w = rng.normal(u, 1.0, (classes, dim))
    b = rng.normal(u, 1.0, classes)
    v = rng.normal(big_b, 1.0, dim)
    x = v + x_std * rng.standard_normal((n, dim))
    y = np.argmax(x @ w.T + b, axis=1)  # softmax is monotone: argmax of the logits
    return x.astype(np.float32), y.astype(np.int64)


def _stack(chunks: list[tuple[np.ndarray, np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.concatenate([c[0] for c in chunks])
    y = np.concatenate([c[1] for c in chunks])
    client = np.concatenate([np.full(len(c[1]), c[2], dtype=np.int64) for c in chunks])
    return x, y, client


DATASET = DataSet(
    "synthetic",
    load,
    input_shape=lambda params: (params.dimension,),
    classes=lambda params: params.classes,
    inputs="signals",
    params=Synthetic,
    order=20,
    check=check,  # no train_pool: every client's samples are its own (data.partition does not apply)
)
