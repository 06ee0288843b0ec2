"""Server optimizers (algorithm.server_optimizer; Reddi et al., ICLR 2021, Algorithm 2; Hsu et al. 2019):
two or three rounds of each on a 2-parameter vector against values computed by hand, the default none
leaving strategies as they were, avgm with beta 0 and lr 1 giving back the algorithm's own step, FedBuff's
server momentum, and the refused contradictions.  Whole runs (determinism, resume): tests/runner/test_resume.py."""

from __future__ import annotations

from fractions import Fraction
from functools import partial

import pytest
import torch
import yaml
from conftest import scenario, update

from asyncfl.algorithms import Context, Update, make_strategy
from asyncfl.algorithms.fedavg import FedAvg
from asyncfl.algorithms.server_optimizers import ServerOptimized, make_server_optimizer
from asyncfl.errors import ConfigError
from asyncfl.sections import resolved_dump

F64 = torch.float64


def optimizer_section(**spec):
    """The validated algorithm.server_optimizer of a fedavg scenario."""
    return scenario(algorithm={"name": "fedavg", "server_optimizer": spec}).algorithm.server_optimizer


def steps(spec: dict, x0: list[float], deltas: list[list[float]]) -> list[list[float]]:
    """x_1, x_2, ... when the algorithm proposes x_t + Delta_t each round."""
    optimizer = make_server_optimizer(optimizer_section(**spec), torch.tensor(x0, dtype=F64))
    x, out = torch.tensor(x0, dtype=F64), []
    for delta in deltas:
        x = optimizer.step(x, x + torch.tensor(delta, dtype=F64))
        out.append(x.tolist())
    return out


def close(actual: list[list[float]], expected: list[list[float]], tol: float = 1e-12) -> bool:
    return all(abs(a - float(e)) <= tol for row, erow in zip(actual, expected) for a, e in zip(row, erow))


def test_avgm_three_rounds_by_hand():
    # lr 0.5, beta 0.9, x_0 = (1, -2); m_t = 0.9 m_{t-1} + Delta_t, x_{t+1} = x_t + 0.5 m_t
    # t=0: Delta (0.2, -0.4):  m = (0.2, -0.4);                                 x = (1.1, -2.2)
    # t=1: Delta (0.1, 0):     m = (0.18 + 0.1, -0.36) = (0.28, -0.36);         x = (1.24, -2.38)
    # t=2: Delta (-0.3, 0.5):  m = (0.252 - 0.3, -0.324 + 0.5) = (-0.048, 0.176); x = (1.216, -2.292)
    got = steps({"kind": "avgm", "lr": 0.5, "beta1": 0.9}, [1.0, -2.0], [[0.2, -0.4], [0.1, 0.0], [-0.3, 0.5]])
    assert close(got, [[1.1, -2.2], [1.24, -2.38], [1.216, -2.292]])


def test_adagrad_three_rounds_by_hand():
    # lr 0.1, beta1 0.5, tau 0.5: v_{-1} = tau^2 = 0.25, m_{-1} = 0, x_0 = (0, 0)
    # t=0: Delta (0.375, 1.2): m = (0.1875, 0.6); v = 0.25 + (0.140625, 1.44) = (0.390625, 1.69),
    #      sqrt v = (0.625, 1.3); x = 0.1 (0.1875 / 1.125, 0.6 / 1.8) = (1/60, 1/30)
    # t=1: Delta (1.5, 0): m = (0.09375 + 0.75, 0.3) = (0.84375, 0.3); v = (0.390625 + 2.25, 1.69) = (2.640625, 1.69),
    #      sqrt v = (1.625, 1.3); x += 0.1 (0.84375 / 2.125, 0.3 / 1.8) = (27/680, 1/60) -> (23/408, 1/20)
    # t=2: Delta (0, 0): m = (0.421875, 0.15); v unchanged; x += 0.1 (0.421875 / 2.125, 0.15 / 1.8) = (27/1360, 1/120)
    #      -> (230/4080 + 81/4080, 6/120 + 1/120) = (311/4080, 7/120)
    F = Fraction
    got = steps(
        {"kind": "adagrad", "lr": 0.1, "beta1": 0.5, "tau": 0.5}, [0.0, 0.0], [[0.375, 1.2], [1.5, 0.0], [0, 0]]
    )
    assert close(got, [[F(1, 60), F(1, 30)], [F(23, 408), F(1, 20)], [F(311, 4080), F(7, 120)]])


ADAPTIVE = {"lr": 0.1, "beta1": 0.5, "beta2": 0.75, "tau": 0.5}
DELTAS = [[1.0, -0.5], [-0.5, 0.0], [2.0, 0.25]]


def test_adam_three_rounds_by_hand():
    # lr 0.1, beta1 0.5, beta2 0.75, tau 0.5: v_{-1} = 0.25, x_0 = (1, -1); v = 0.75 v + 0.25 Delta^2
    # (no bias correction)
    # t=0: Delta (1, -0.5): m = (0.5, -0.25); v = (0.1875 + 0.25, 0.1875 + 0.0625) = (0.4375, 0.25)
    #      x = (1 + 0.05 / (0.6614378 + 0.5), -1 - 0.025 / (0.5 + 0.5)) = (1.0430501, -1.025)
    # t=1: Delta (-0.5, 0): m = (0.25 - 0.25, -0.125) = (0, -0.125);
    #      v = (0.328125 + 0.0625, 0.1875) = (0.390625, 0.1875)
    #      x = (1.0430501 (m = 0: no move), -1.025 - 0.0125 / (0.4330127 + 0.5)) = (1.0430501, -1.0383975)
    # t=2: Delta (2, 0.25): m = (1.0, -0.0625 + 0.125) = (1.0, 0.0625);
    #      v = (0.29296875 + 1.0, 0.140625 + 0.015625) = (1.29296875, 0.15625)
    #      x = (1.0430501 + 0.1 / (1.1370878 + 0.5), -1.0383975 + 0.00625 / (0.3952847 + 0.5)) = (1.1041342, -1.0314164)
    got = steps({"kind": "adam", **ADAPTIVE}, [1.0, -1.0], DELTAS)
    expected = [[1.0430500874, -1.025], [1.0430500874, -1.0383974596], [1.1041341647, -1.0314164401]]
    assert close(got, expected, tol=1e-9)


def test_yogi_three_rounds_by_hand():
    # same as Adam but v = v - 0.25 Delta^2 sign(v - Delta^2), v_{-1} = 0.25, x_0 = (1, -1)
    # t=0: Delta (1, -0.5): Delta^2 (1, 0.25); sign(v - Delta^2) = (-1, 0) -> v = (0.25 + 0.25, 0.25) = (0.5, 0.25)
    #      m = (0.5, -0.25); x = (1 + 0.05 / (0.7071068 + 0.5), -1 - 0.025 / 1) = (1.0414214, -1.025)
    # t=1: Delta (-0.5, 0): Delta^2 (0.25, 0); sign (+1, +1) -> v = (0.5 - 0.0625, 0.25 - 0) = (0.4375, 0.25)
    #      m = (0, -0.125); x = (1.0414214, -1.025 - 0.0125 / 1) = (1.0414214, -1.0375)   (Adam's v decayed here)
    # t=2: Delta (2, 0.25): Delta^2 (4, 0.0625); sign (-1, +1) -> v = (0.4375 + 1, 0.25 - 0.015625) = (1.4375, 0.234375)
    #      m = (1.0, 0.0625); x = (1.0414214 + 0.1 / (1.1989579 + 0.5), -1.0375 + 0.00625 / (0.4841229 + 0.5))
    #        = (1.1002810, -1.0311492)
    got = steps({"kind": "yogi", **ADAPTIVE}, [1.0, -1.0], DELTAS)
    expected = [[1.0414213562, -1.025], [1.0414213562, -1.0375], [1.1002809673, -1.0311491673]]
    assert close(got, expected, tol=1e-9)


def test_the_state_holds_m_and_v_and_v_starts_at_tau_squared():
    optimizer = make_server_optimizer(optimizer_section(kind="adam", lr=1.0, tau=0.3), torch.zeros(2, dtype=F64))
    assert torch.equal(optimizer.state_dict()["v"], torch.full((2,), 0.09, dtype=F64))
    assert torch.equal(optimizer.state_dict()["m"], torch.zeros(2, dtype=F64))


_update = partial(update, lr=0.1)  # the shared builder


def _context(r: int) -> Context:
    return Context(version=r, time=0.0, num_clients=4)


def test_none_is_the_default_and_leaves_the_strategy_unwrapped():
    params = scenario(algorithm={"name": "fedavg"}).algorithm
    assert params.server_optimizer.kind == "none"
    assert type(make_strategy(params, 4, torch.zeros(2))) is FedAvg
    assert make_server_optimizer(params.server_optimizer, torch.zeros(2)) is None


def test_avgm_with_beta_0_and_lr_1_is_the_algorithms_own_step():
    plain = make_strategy(scenario(algorithm={"name": "fedavg"}).algorithm, 4, torch.zeros(3))
    raw = {"name": "fedavg", "server_optimizer": {"kind": "avgm", "lr": 1.0, "beta1": 0.0}}
    wrapped = make_strategy(scenario(algorithm=raw).algorithm, 4, torch.zeros(3))
    assert isinstance(wrapped, ServerOptimized)
    generator = torch.Generator().manual_seed(1)
    x = y = torch.randn(3, generator=generator)
    for r in range(4):
        updates = [Update(c, torch.randn(3, generator=generator), r, 0, 10, 1, 0.1) for c in range(3)]
        x, y = plain.aggregate(x, updates, _context(r)).params, wrapped.aggregate(y, updates, _context(r)).params
        assert torch.allclose(x, y, rtol=0, atol=1e-6)  # x + (x_new - x) == x_new up to float32 rounding


def test_fedbuff_server_momentum_is_avgm_on_the_buffered_aggregate():
    # FedBuff: aggregate = (1/K) sum s(tau_i) Delta_i, s(tau) = (1 + tau)^-0.5, K = 2
    # v=0: Delta (1, 0) fresh, (0, 2) 3 stale (s = 0.5): aggregate ((1, 0) + (0, 1)) / 2 = (0.5, 0.5)
    #      avgm lr 2, beta 0.5: m = (0.5, 0.5); x = (0, 0) + 2 m = (1, 1)
    # v=1: Delta (2, 2) and (0, 0) fresh: aggregate (1, 1); m = 0.5 (0.5, 0.5) + (1, 1) = (1.25, 1.25); x = (3.5, 3.5)
    raw = {"name": "fedbuff", "server_optimizer": {"kind": "avgm", "lr": 2.0, "beta1": 0.5}}
    params = scenario(server={"mode": "k_async", "k": 2}, algorithm=raw).algorithm
    strategy = make_strategy(params, 4, torch.zeros(2, dtype=F64))
    x = torch.zeros(2, dtype=F64)
    result = strategy.aggregate(x, [_update(0, [1, 0]), _update(1, [0, 2], staleness=3)], _context(0))
    assert result.params.tolist() == [1.0, 1.0]
    assert result.weights == {0: 0.5, 1: 0.25}  # the strategy's own weights are kept
    x = strategy.aggregate(result.params, [_update(2, [2, 2]), _update(3, [0, 0])], _context(1)).params
    assert x.tolist() == [3.5, 3.5]
    assert strategy.state_dict()["server_optimizer"]["m"].tolist() == [1.25, 1.25]


def test_an_aggregation_without_updates_changes_nothing():
    raw = {"name": "fedavg", "server_optimizer": {"kind": "avgm", "lr": 1.0, "beta1": 0.9}}
    strategy = make_strategy(scenario(algorithm=raw).algorithm, 4, torch.zeros(2, dtype=F64))
    x = strategy.aggregate(torch.zeros(2, dtype=F64), [_update(0, [1, -1])], _context(0)).params  # m = (1, -1)
    assert strategy.aggregate(x, [], _context(1)).params.tolist() == [1.0, -1.0]  # momentum would move it
    assert strategy.state_dict()["server_optimizer"]["m"].tolist() == [1.0, -1.0]


def test_the_wrapped_state_holds_the_strategys_and_the_optimizers():
    raw = {"name": "mifa", "server_optimizer": {"kind": "yogi", "lr": 0.1}}
    make = lambda: make_strategy(scenario(algorithm=raw).algorithm, 4, torch.zeros(2))  # noqa: E731
    original, x = make(), torch.zeros(2)
    for r in range(2):
        x = original.aggregate(
            x, [Update(r, torch.tensor([1.0, -2.0]) * (r + 1), r, 0, 10, 1, 0.1)], _context(r)
        ).params
    state = original.state_dict()
    assert set(state) == {"strategy", "server_optimizer"} and state["strategy"]  # MIFA's memory is in it
    fresh = make()
    fresh.load_state_dict(state)
    update = [Update(3, torch.tensor([0.5, 0.5]), 2, 0, 10, 1, 0.1)]
    assert torch.equal(
        original.aggregate(x, update, _context(2)).params, fresh.aggregate(x, update, _context(2)).params
    )


@pytest.mark.parametrize(
    "optimizer, message",
    [
        ({"kind": "adam", "lr": 0.1, "beta1": 1.0}, "algorithm.server_optimizer.beta1: Input should be less than 1"),
        ({"kind": "yogi", "lr": 0.1, "beta2": -0.1}, "algorithm.server_optimizer.beta2: Input should be greater"),
        ({"kind": "avgm", "beta1": 1.5}, "algorithm.server_optimizer.beta1: Input should be less than 1"),
        ({"kind": "adagrad", "lr": 0.1, "tau": 0.0}, "algorithm.server_optimizer.tau: Input should be greater than 0"),
        ({"kind": "adam", "lr": 0.0}, "algorithm.server_optimizer.lr: Input should be greater than 0"),
        ({"kind": "adam"}, "algorithm.server_optimizer.lr: required key is missing"),
        ({"kind": "sgd"}, "allowed: 'none', 'avgm', 'adagrad', 'adam', 'yogi'"),
        ({"kind": "avgm", "beta2": 0.9}, "algorithm.server_optimizer.beta2: unknown key"),
    ],
)
def test_bad_values_are_refused_with_the_path_and_the_allowed_values(optimizer, message):
    with pytest.raises(ConfigError) as error:
        scenario(algorithm={"name": "fedavg", "server_optimizer": optimizer})
    assert message in str(error.value)


def test_server_lr_with_an_optimizer_is_refused_because_the_two_rates_would_be_ambiguous():
    with pytest.raises(ConfigError) as error:
        scenario(algorithm={"name": "fedavg", "server_lr": 0.5, "server_optimizer": {"kind": "avgm"}})
    assert "algorithm.server_lr must stay 1 (got 0.5); set the rate in server_optimizer.lr" in str(error.value)
    scenario(algorithm={"name": "fedavg", "server_lr": 0.5})  # without an optimizer it is the algorithm's own


def test_fedasync_takes_no_server_optimizer():
    with pytest.raises(ConfigError) as error:
        scenario(
            server={"mode": "k_async", "k": 1}, algorithm={"name": "fedasync", "server_optimizer": {"kind": "avgm"}}
        )
    assert "algorithm.name fedasync takes no server optimizer" in str(error.value)


def test_the_key_is_written_only_when_set_so_earlier_config_files_stay_identical():
    default = scenario(algorithm={"name": "fedavg"})
    assert "server_optimizer" not in resolved_dump(default)["algorithm"]
    chosen = scenario(algorithm={"name": "fedavg", "server_optimizer": {"kind": "adam", "lr": 0.01}})
    dumped = yaml.safe_load(yaml.safe_dump(resolved_dump(chosen)))
    assert dumped["algorithm"]["server_optimizer"] == {
        "kind": "adam",
        "lr": 0.01,
        "beta1": 0.9,
        "beta2": 0.99,
        "tau": 0.001,
    }
    assert scenario(**dumped) == chosen  # config.yaml reads back to the same scenario (resume)


MOMENT_SPECS = [
    {"kind": "avgm", "lr": 0.5, "beta1": 0.9},
    {"kind": "adagrad", "lr": 0.05},
    {"kind": "adam", "lr": 0.05},
    {"kind": "yogi", "lr": 0.05},
]


def _fednova_optimized(spec: dict, memory: dict, like: torch.Tensor):
    """FedNova (which keeps no memory of its own) with a server optimizer and ``algorithm.memory``."""
    params = scenario(algorithm={"name": "fednova", "server_optimizer": spec, "memory": memory}).algorithm
    return make_strategy(params, 4, like)


def _rounds(strategy, like: torch.Tensor, rounds: int = 8) -> torch.Tensor:
    """``rounds`` FedNova aggregations of two clients' seeded random deltas (5 and 3 local steps)."""
    gen, x = torch.Generator().manual_seed(3), like.clone()
    for r in range(rounds):
        deltas = [0.1 * torch.randn(like.shape, generator=gen, dtype=like.dtype) for _ in range(2)]
        updates = [Update(c, d, r, 0, 10 + c, 5 - 2 * c, 0.1) for c, d in enumerate(deltas)]
        x = strategy.aggregate(x, updates, _context(r)).params
    return x


@pytest.mark.parametrize("spec", MOMENT_SPECS, ids=lambda s: s["kind"])
@pytest.mark.parametrize(("dtype", "tol"), [("float32", 0.0), ("bfloat16", 3e-2), ("float16", 3e-3)])
def test_moment_buffers_follow_algorithm_memory_dtype(spec, dtype, tol):
    """m (and v) are kept in algorithm.memory.dtype; the steps are computed in the model's dtype, which
    the new model keeps.  Eight rounds against float32 buffers: max |x - x_float32| <= tol, at least 3x
    the measured gap (bfloat16: at most 2.4e-3, float16: at most 4.3e-4, both avgm's, over the four kinds)."""
    like = torch.linspace(-1.0, 1.0, 16)
    reference = _rounds(_fednova_optimized(spec, {}, like), like)
    strategy = _fednova_optimized(spec, {"dtype": dtype}, like)
    x = _rounds(strategy, like)
    state = strategy.state_dict()["server_optimizer"]
    assert {name: t.dtype for name, t in state.items()} == {name: getattr(torch, dtype) for name in state}
    assert x.dtype == torch.float32 and float((x - reference).abs().max()) <= tol
    assert float((x - like).abs().max()) > 0.05  # the optimizer did move the model


def test_moment_buffers_follow_algorithm_memory_device():
    """device model: m and v where the model is (here the meta device); device cpu: on the CPU."""
    like = torch.zeros(6, device="meta")
    on_model = _fednova_optimized({"kind": "adam", "lr": 0.1}, {"device": "model"}, like)
    on_cpu = _fednova_optimized({"kind": "adam", "lr": 0.1}, {"device": "cpu", "dtype": "bfloat16"}, like)
    assert {t.device.type for t in on_model.state_dict()["server_optimizer"].values()} == {"meta"}
    assert {(t.device.type, t.dtype) for t in on_cpu.state_dict()["server_optimizer"].values()} == {
        ("cpu", torch.bfloat16)
    }


@pytest.mark.parametrize("name", ["fednova", "fedavg", "fedau"])
def test_algorithm_memory_is_refused_where_nothing_would_follow_it(name):
    """Without a server optimizer these algorithms keep nothing where algorithm.memory says: a setting
    other than the default is refused with the key; the default, written out, is accepted."""
    with pytest.raises(ConfigError, match=r"algorithm\.memory: algorithm\.name " + name + ".*would be ignored"):
        scenario(algorithm={"name": name, "memory": {"dtype": "float16"}})
    with pytest.raises(ConfigError, match=r"algorithm\.memory"):
        scenario(algorithm={"name": name, "memory": {"device": "cpu"}})
    scenario(algorithm={"name": name, "memory": {"device": "model", "dtype": "float32"}})
