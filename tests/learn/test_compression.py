"""Update compression (``training.compression``, asyncfl/learn/compression): QSGD's stochastic levels,
top-k with error feedback, the compressed upload size the timing world charges, and runs that use them
(deterministic, resumable, and unchanged when compression is off)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from conftest import events, scenario, table

from asyncfl.algorithms import make_strategy
from asyncfl.errors import ConfigError
from asyncfl.learn.compression import REGISTRY, CompressedUploads, qsgd, topk, upload_bytes
from asyncfl.learn.compression.qsgd import QsgdCompression
from asyncfl.learn.compression.topk import TopkCompression, keep_count
from asyncfl.runner import start
from tests.runner.test_resume import MODES, _kill_at_event, _same_results

V = torch.tensor([1.0, -2.0, 2.0, 4.0])  # ||V||_2 = sqrt(1 + 4 + 4 + 16) = 5


class FixedDraws:
    """Stands for the update's stream: ``random(n)`` returns the given uniforms."""

    def __init__(self, uniforms: list[float]) -> None:
        self.uniforms = np.array(uniforms)

    def random(self, n: int) -> np.ndarray:
        assert n == len(self.uniforms)
        return self.uniforms


def test_qsgd_rounds_each_level_up_with_the_probability_of_its_fractional_part():
    # b = 2: s = 3 levels.  |v_i| / ||v|| * s = (1, 2, 2, 4) / 5 * 3 = (0.6, 1.2, 1.2, 2.4):
    # l = (0, 1, 1, 2), fractional parts p = (0.6, 0.2, 0.2, 0.4).  Level l + 1 where u < p:
    # u = 0.5 < 0.6 -> 1;  0.5 >= 0.2 -> 1;  0.1 < 0.2 -> 2;  0.9 >= 0.4 -> 2.
    # Q = ||v|| * sign(v) * level / s = 5/3 * (1, -1, 2, 2)
    sent = qsgd.compress(V, QsgdCompression(kind="qsgd", bits=2), FixedDraws([0.5, 0.5, 0.1, 0.9]))
    assert sent.dtype == V.dtype
    assert torch.equal(sent, torch.tensor([5 / 3, -5 / 3, 10 / 3, 10 / 3], dtype=torch.float32))
    # the boundary: (1, 1, 1, 1) has ||v|| = 2, ratios 1/2 * 3 = 1.5 (exact in floats), l = 1, p = 0.5;
    # u = p is not below p -> level 1 (2/3), u just below p -> level 2 (4/3)
    ones = torch.ones(4)
    sent = qsgd.compress(ones, QsgdCompression(kind="qsgd", bits=2), FixedDraws([0.5, 0.4999, 0.0, 0.99]))
    assert torch.equal(sent, torch.tensor([2 / 3, 4 / 3, 4 / 3, 2 / 3], dtype=torch.float32))


def test_qsgd_is_unbiased_and_sends_only_its_levels():
    spec, s, draws = QsgdCompression(kind="qsgd", bits=2), 3, 20_000
    rng = np.random.default_rng(7)
    samples = torch.stack([qsgd.compress(V, spec, rng) for _ in range(draws)]).double()
    allowed = {round(5 * sign * level / s, 5) for sign in (1, -1) for level in range(s + 1)}  # 0, +-5/3, +-10/3, +-5
    assert {round(x, 5) for x in samples.flatten().tolist()} <= allowed
    # Var Q_i = (||v|| / s)^2 p (1 - p), p = (0.6, 0.2, 0.2, 0.4) (Lemma 3.1's per-coordinate variance)
    p = torch.tensor([0.6, 0.2, 0.2, 0.4], dtype=torch.float64)
    sd_of_mean = torch.sqrt((5 / s) ** 2 * p * (1 - p) / draws)  # about 0.006 to 0.008
    assert torch.all((samples.mean(0) - V.double()).abs() < 5 * sd_of_mean)
    assert torch.allclose(samples.var(0), (5 / s) ** 2 * p * (1 - p), rtol=0.05)


def test_qsgd_one_bit_is_ternary_and_a_zero_update_stays_zero():
    sent = qsgd.compress(V, QsgdCompression(kind="qsgd", bits=1), np.random.default_rng(0))
    assert set(sent.tolist()) <= {0.0, 5.0, -5.0}
    assert torch.equal(
        qsgd.compress(torch.zeros(4), QsgdCompression(kind="qsgd"), FixedDraws([0.0] * 4)), torch.zeros(4)
    )


def test_topk_keeps_exactly_the_largest_magnitudes():
    v = torch.tensor([0.5, -3.0, 2.0, -0.1, 1.0])
    # fraction 0.4 of 5: k = 2 -> -3 and 2 stay, the rest is zero
    assert torch.equal(
        topk.compress(v, TopkCompression(kind="topk", fraction=0.4), None), torch.tensor([0, -3.0, 2, 0, 0])
    )
    # fraction 0.41: k = ceil(2.05) = 3 -> 1.0 joins
    assert torch.equal(
        topk.compress(v, TopkCompression(kind="topk", fraction=0.41), None), torch.tensor([0, -3.0, 2, 0, 1])
    )


def _topk(values, fraction):
    return topk.compress(torch.tensor(values), TopkCompression(kind="topk", fraction=fraction), None)


def test_topk_breaks_ties_by_the_lowest_index():
    """Equal magnitudes at the k-th place: the lowest indices are kept, whatever their signs.
    [1, -1, 1, -1, 1, -1], k = 3 of 6: indices 0, 1, 2.
    [0.5, 2, -2, 0.5, 2, -0.5, 1]: k = 3 (fraction 0.42, ceil 2.94) keeps the three 2s (1, 2, 4); k = 5
    (0.65, ceil 4.55) adds 1 (index 6) and the first 0.5 (index 0 of 0, 3, 5); k = 6 (0.8) index 3 too."""
    assert _topk([1.0, -1, 1, -1, 1, -1], 0.5).tolist() == [1, -1, 1, 0, 0, 0]
    v = [0.5, 2, -2, 0.5, 2, -0.5, 1]
    assert _topk(v, 0.42).tolist() == [0, 2, -2, 0, 2, 0, 0]
    assert _topk(v, 0.65).tolist() == [0.5, 2, -2, 0, 2, 0, 1]
    assert _topk(v, 0.8).tolist() == [0.5, 2, -2, 0.5, 2, 0, 1]
    assert _topk([0.0] * 5, 0.4).tolist() == [0.0] * 5  # all tied at 0: nothing to keep but zeros
    kept = _topk([1.0, float("nan"), 2.0, float("nan")], 0.25).tolist()  # k = 1: NaN ranks first, as in torch.topk
    assert math.isnan(kept[1]) and [kept[0], kept[2], kept[3]] == [0, 0, 0]


def test_topk_ties_match_a_stable_sort_on_many_ties():
    """10,000 coordinates in {-3, ..., 3}, k = 1,000 and 5,000: the kept set is the first k of a stable
    sort by decreasing magnitude (numpy's lexsort on (index, -|v|)): all the 3s, then 2s by index."""
    gen = torch.Generator().manual_seed(0)
    v = torch.randint(-3, 4, (10_000,), generator=gen).float()
    for fraction in (0.1, 0.5):
        k = keep_count(fraction, v.numel())
        order = np.lexsort((np.arange(v.numel()), -v.abs().numpy()))[:k]
        expected = torch.zeros_like(v)
        expected[order] = v[order]
        sent = topk.compress(v, TopkCompression(kind="topk", fraction=fraction), None)
        assert torch.equal(sent, expected)


def test_keep_count_reads_the_fraction_as_written():
    assert keep_count(0.3, 10) == 3  # 0.3 * 10 is 3.0000000000000004 in floats: not 4
    assert keep_count(0.01, 650) == 7  # ceil(6.5)
    assert keep_count(1e-9, 10) == 1 and keep_count(1.0, 10) == 10


def test_upload_bytes_are_the_compressed_sizes():
    n = 650  # logreg on digits: 64 * 10 weights + 10 biases
    assert upload_bytes(REGISTRY["none"].section(), n) == 2600  # 650 float32
    # qsgd b = 4: 32 + 650 * (4 + 1) = 3282 bits = 410.25 -> 411 bytes
    assert upload_bytes(QsgdCompression(kind="qsgd", bits=4), n) == 411
    # topk 0.1: k = 65; pairs 65 * 8 = 520, bitmap ceil(650 / 8) + 65 * 4 = 82 + 260 = 342 -> the bitmap
    assert upload_bytes(TopkCompression(kind="topk", fraction=0.1), n) == 342
    # topk 0.01: k = 7; pairs 56, bitmap 82 + 28 = 110 -> the pairs
    assert upload_bytes(TopkCompression(kind="topk", fraction=0.01), n) == 56


def test_error_feedback_sends_everything_in_the_end():
    uploads = CompressedUploads(TopkCompression(kind="topk", fraction=0.25), seed=0)  # k = 1 of 4
    d1, d2 = torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([4.0, 0.5, 0.25, 1.0])
    pending: dict = {}
    sent1 = uploads.compress(0, 0, d1, pending)
    assert torch.equal(sent1, torch.tensor([0, 0, 0, 4.0]))
    assert uploads.residuals == {}  # kept only when the round is aggregated
    uploads.commit(pending)
    assert torch.equal(uploads.residuals[0], torch.tensor([1.0, 2, 3, 0]))
    pending = {}
    sent2 = uploads.compress(0, 1, d2, pending)  # d2 + e = (5, 2.5, 3.25, 1): 5 is sent
    assert torch.equal(sent2, torch.tensor([5.0, 0, 0, 0]))
    uploads.commit(pending)
    assert torch.equal(uploads.residuals[0], torch.tensor([0, 2.5, 3.25, 1]))
    # the invariant: what was sent plus what is kept is what was computed (exact: dyadic values)
    assert torch.equal(sent1 + sent2 + uploads.residuals[0], d1 + d2)


def test_error_feedback_is_per_client_and_chains_two_updates_of_one_round():
    uploads = CompressedUploads(TopkCompression(kind="topk", fraction=0.5), seed=0)  # k = 1 of 2
    pending: dict = {}
    uploads.compress(1, 0, torch.tensor([1.0, 2.0]), pending)  # client 1 keeps (1, 0) and never returns
    a = uploads.compress(0, 0, torch.tensor([3.0, 1.0]), pending)  # sends (3, 0), keeps (0, 1)
    b = uploads.compress(0, 1, torch.tensor([0.0, 0.5]), pending)  # (0, 0.5) + (0, 1): sends (0, 1.5)
    uploads.commit(pending)
    assert torch.equal(a, torch.tensor([3.0, 0])) and torch.equal(b, torch.tensor([0, 1.5]))
    assert torch.equal(uploads.residuals[0], torch.zeros(2))
    assert torch.equal(uploads.residuals[1], torch.tensor([1.0, 0]))
    state = uploads.state()
    fresh = CompressedUploads(TopkCompression(kind="topk", fraction=0.5), seed=0)
    fresh.restore(state)
    assert fresh.residuals.keys() == {0, 1}


def test_without_error_feedback_nothing_is_kept():
    uploads = CompressedUploads(TopkCompression(kind="topk", fraction=0.5, error_feedback=False), seed=0)
    pending: dict = {}
    uploads.compress(0, 0, torch.tensor([1.0, 2.0]), pending)
    assert pending == {}


def test_qsgd_draws_come_from_the_client_and_attempt_stream():
    from asyncfl.seeding import stream

    spec = QsgdCompression(kind="qsgd", bits=2)
    uploads = CompressedUploads(spec, seed=5)
    expected = qsgd.compress(V, spec, stream(5, "compression", 3, 7))
    assert torch.equal(uploads.compress(3, 7, V, {}), expected)
    assert torch.equal(uploads.compress(3, 7, V, {}), expected)  # the same task: the same draws


def test_the_strategy_aggregates_the_compressed_updates():
    """FedAvg through the Learner with topk: w0 + the mean of the top-k of each trained delta."""
    from asyncfl.learn.federation import build_federation
    from asyncfl.learn.models import build_model
    from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
    from asyncfl.runner.learning import Learner
    from asyncfl.runner.record import staleness_of
    from asyncfl.sim.clients import TaskPlan
    from asyncfl.sim.servers import ClosedRound

    s = scenario(
        data={"dataset": "digits", "clients": 4},
        model={"name": "logreg"},
        training={"compression": {"kind": "topk", "fraction": 0.1}},
    )
    fed = build_federation(s.data, s.seed, torch.device("cpu"))
    model = build_model("logreg", fed.input_shape, fed.num_classes)
    w0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    trainer = SequentialTrainer(model, fed, s.training, s.seed)
    learner = Learner(model, fed, make_strategy(s.algorithm, 4, w0), trainer, s.training, seed=s.seed)
    plans = [TaskPlan(c, 0, 0, 0.0, [], 1.0) for c in (0, 2, 3)]
    closed = ClosedRound(1, 0.0, 1.0, selected=[0, 1, 2, 3], received=plans, started_tasks=plans)
    learner.queue(closed.started_tasks)
    updates = learner.train(closed, staleness_of(closed))
    assert all(int((u.delta != 0).sum()) == 65 for u in updates)  # k = ceil(0.1 * 650)
    learner.apply(closed, updates, record_weights=False)
    deltas = [trainer.run(w0, [TrainingJob(c, 0, 0, s.training.local_steps)])[0].delta for c in (0, 2, 3)]
    spec = s.training.compression
    sent = [topk.compress(d, spec, None) for d in deltas]
    assert torch.allclose(learner.params, w0 + torch.stack(sent).mean(0), atol=1e-6)
    for client, d, x in zip((0, 2, 3), deltas, sent):
        assert torch.allclose(learner.uploads.residuals[client], d - x, atol=1e-7)
    assert "compression" in learner.state()


TIMING = dict(
    data={"dataset": "digits", "clients": 6},
    model={"name": "logreg"},  # 650 parameters
    population={"network": {"uplink_mbps": 0.008, "latency_s": 0.05}},  # 1000 bytes/s up
    stop={"rounds": 3},
    output={"plot": False},
)


@pytest.mark.parametrize(
    "compression, upload_s",
    [
        ({"kind": "none"}, 0.05 + 2600 / 1000),  # 650 float32
        ({"kind": "qsgd", "bits": 4}, 0.05 + 411 / 1000),  # ceil((32 + 650 * 5) / 8)
        ({"kind": "topk", "fraction": 0.1}, 0.05 + 342 / 1000),  # bitmap 82 + 65 values * 4
    ],
)
@pytest.mark.parametrize("timing_only", [True, False])
def test_the_upload_lasts_the_compressed_bytes_over_the_bandwidth(tmp_path, compression, upload_s, timing_only):
    s = scenario(**TIMING, training={"compression": compression}, timing_only=timing_only)
    run_dir = start.run_scenario(s, tmp_path / "run")
    started = {}
    durations = []
    for e in events(run_dir):
        if e["event"] == "upload":
            started[e["client"]] = e["t"]
        elif e["event"] == "arrive":
            durations.append(e["t"] - started.pop(e["client"]))
    assert len(durations) >= 6
    assert durations == pytest.approx([upload_s] * len(durations), rel=1e-9)


def test_battery_energy_follows_the_compressed_upload():
    from asyncfl.sim.availability.always import Always
    from asyncfl.sim.battery import DeviceBattery
    from asyncfl.sim.clients import ClientDevice, Work, plan_task
    from asyncfl.sim.profiles import DeviceProfile

    # 1000 bytes/s both ways, no latency, 1 sample/s; energy only per byte (0.5 J)
    client = ClientDevice(0, DeviceProfile(1.0, 1000.0, 1000.0, 0.0), Always(), np.random.default_rng(0))
    client.battery = DeviceBattery(capacity_j=1e6, level_j=1e6, min_level=0.0)
    work = Work(local_steps=1, batch_size=1, model_bytes=2600, joules_per_byte=0.5, upload_bytes=342)
    plan = plan_task(client, work, 0.0, 0)
    # download 2.6 s, compute 1 s, upload 0.342 s; energy 0.5 * (2600 + 342) = 1471 J
    assert plan.phase_starts == pytest.approx([0.0, 2.6, 3.6]) and plan.end == pytest.approx(3.942)
    assert client.battery.used_j == pytest.approx(1471.0)
    assert Work(1, 1, 2600).upload_size == 2600  # no compression: the model's bytes


def test_none_is_the_run_without_compression(tmp_path):
    plain = start.run_scenario(scenario(**TIMING), tmp_path / "plain")
    none = start.run_scenario(scenario(**TIMING, training={"compression": {"kind": "none"}}), tmp_path / "none")
    assert (plain / "events.jsonl").read_bytes() == (none / "events.jsonl").read_bytes()
    for name in ("metrics.csv", "rounds.csv", "clients.csv"):
        rows = [[{k: v for k, v in r.items() if k != "wall_seconds"} for r in table(d / name)] for d in (plain, none)]
        assert rows[0] == rows[1], name


COMPRESSED = {
    "qsgd": {"kind": "qsgd", "bits": 2, "error_feedback": True},
    "topk": {"kind": "topk", "fraction": 0.05},
}


@pytest.mark.parametrize("kind", sorted(COMPRESSED))
def test_a_compressed_run_is_deterministic_and_resumes_identically(tmp_path, monkeypatch, kind):
    raw = {**MODES["k_async"], "stop": {"rounds": 8}}  # fedbuff: a client may deliver twice per buffer
    raw["training"] = {**raw["training"], "compression": COMPRESSED[kind]}
    s = scenario(**raw)
    first = start.run_scenario(s, tmp_path / "first")
    second = start.run_scenario(s, tmp_path / "second")
    _same_results(first, second)
    plain = start.run_scenario(scenario(**{**raw, "training": MODES["k_async"]["training"]}), tmp_path / "plain")
    assert table(plain / "metrics.csv")[-1]["test_accuracy"] != table(first / "metrics.csv")[-1]["test_accuracy"]
    lines = (first / "events.jsonl").read_text().splitlines()
    total = sum('"event":"aggregate"' not in line for line in lines)
    for n in (total // 3, 2 * total // 3, total - 1):
        run_dir = tmp_path / f"killed_at_{n}"
        assert _kill_at_event(monkeypatch, s, run_dir, n)
        start.resume_run(run_dir)
        _same_results(first, run_dir)
    summary = json.loads((first / "summary.json").read_text())
    assert summary["status"] == "finished"


@pytest.mark.parametrize(
    "compression, words",
    [
        ({"kind": "zip"}, ["training.compression.kind", "'none', 'qsgd', 'topk'"]),
        ({"kind": "qsgd", "bits": 0}, ["training.compression.bits", "greater than or equal to 1"]),
        ({"kind": "qsgd", "bits": 17}, ["training.compression.bits", "less than or equal to 16"]),
        ({"kind": "topk", "fraction": 0}, ["training.compression.fraction", "greater than 0"]),
        ({"kind": "topk", "fraction": 1.5}, ["training.compression.fraction", "less than or equal to 1"]),
        ({"kind": "topk", "bits": 4}, ["training.compression.bits: unknown key", "error_feedback, fraction, kind"]),
        ({"kind": "none", "fraction": 0.1}, ["training.compression.fraction: unknown key"]),  # nothing to sparsify
    ],
)
def test_compression_keys_are_validated(compression, words):
    with pytest.raises(ConfigError) as caught:
        scenario(training={"compression": compression})
    for word in words:
        assert word in str(caught.value), (word, str(caught.value))


def test_defaults():
    s = scenario()
    assert s.training.compression.kind == "none"
    assert scenario(training={"compression": {"kind": "topk"}}).training.compression.error_feedback is True
    assert scenario(training={"compression": {"kind": "qsgd"}}).training.compression.bits == 4
    assert math.isclose(scenario(training={"compression": {"kind": "topk"}}).training.compression.fraction, 0.01)
