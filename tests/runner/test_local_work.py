"""Partial work (``training.local_work``): the step count is decided when a task is planned, its
compute time follows it, and the training job trains exactly that many steps; every executor trains
jobs of different step counts (and FedProx's proximal term, and the squared-loss statistic) alike."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import scenario, table

from asyncfl.config import ConfigError
from asyncfl.config.schema import Data
from asyncfl.learn.batched import BatchedTrainer, FusedTrainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Training
from asyncfl.runner import start
from asyncfl.sim.availability import AvailabilityModel
from asyncfl.sim.clients import ClientDevice, Work, check_time_budget, plan_task
from asyncfl.sim.profiles import DeviceProfile

TOL = 1e-5


def _client(speed: float, train_samples: int) -> ClientDevice:
    class Online(AvailabilityModel):
        def online(self, t, rnd):
            return True

        def next_offline(self, t, rnd):
            return math.inf

        def next_online(self, t):
            return t

    profile = DeviceProfile(speed, 1e9, 1e9, 0.0)
    return ClientDevice(0, profile, Online(), None, train_samples=train_samples)


def test_time_budget_gives_floor_of_budget_times_speed_over_batch_at_least_one():
    work = Work(10, 10, 1000, time_budget_s=1.0)
    # (speed, train samples) -> floor(1.0 * speed / min(10, n)), at least 1
    cases = {
        (35.0, 100): 3,  # floor(35 / 10) = floor(3.5)
        (100.0, 100): 10,  # exactly 10: no rounding down to 9
        (5.0, 100): 1,  # floor(0.5) = 0 -> at least one step
        (10.0, 4): 2,  # batch min(10, 4) = 4: floor(10 / 4) = floor(2.5)
    }
    for (speed, n), steps in cases.items():
        assert work.steps(_client(speed, n)) == steps, (speed, n)
    # 0.3 * 10 / 1 is 2.9999999999999996 in floats: a budget of exactly 3 steps gives 3
    assert Work(10, 1, 1000, time_budget_s=0.3).steps(_client(10.0, 5)) == 3


def test_time_budget_with_max_steps_caps_fast_clients_only():
    capped = Work(10, 10, 1000, time_budget_s=1.0, max_steps=4)
    assert capped.steps(_client(100.0, 100)) == 4  # floor(100 / 10) = 10, capped at 4
    assert capped.steps(_client(35.0, 100)) == 3  # floor(3.5) = 3 < 4: a straggler does less
    assert capped.steps(_client(5.0, 100)) == 1  # at least one step


def test_epochs_give_ceil_of_epochs_times_samples_over_batch():
    assert Work(10, 10, 1000, epochs=2.0).steps(_client(1.0, 25)) == 5  # ceil(2 * 25 / 10)
    assert Work(10, 10, 1000, epochs=0.5).steps(_client(1.0, 25)) == 2  # ceil(1.25)
    assert Work(10, 10, 1000, epochs=1.0).steps(_client(1.0, 4)) == 1  # batch 4: ceil(4 / 4)
    assert Work(10, 10, 1000, epochs=1.0).steps(_client(1.0, 30)) == 3  # exactly 3, not ceil(3 + ulp) = 4


def test_fixed_steps_are_local_steps_and_the_plan_carries_the_count():
    assert Work(7, 10, 1000).steps(_client(35.0, 100)) == 7
    client = _client(35.0, 100)
    plan = plan_task(client, Work(7, 10, 1000, time_budget_s=1.0), 0.0, 0)
    assert plan.steps == 3 and plan.delivered
    # compute phase = 3 steps * 10 samples / 35 per second (no jitter)
    assert plan.phase_starts[2] - plan.phase_starts[1] == pytest.approx(30 / 35, rel=1e-12)
    assert client.stats.compute_s == pytest.approx(30 / 35, rel=1e-12)


def test_time_budget_shorter_than_one_step_for_every_client_is_refused():
    # quickest step: min(10, 4) / 10 = 0.4 s <= 0.5: that client does one step
    check_time_budget(0.5, 10, [10.0, 10.0], [100, 4])
    with pytest.raises(
        ConfigError, match=r"seconds \(0.5\) is shorter than one local step for every client: .* takes 1 s"
    ):
        check_time_budget(0.5, 10, [10.0, 10.0], [100, 100])  # every step takes 10 / 10 = 1 s
    check_time_budget(None, 10, [1.0], [100])  # fixed steps: nothing to check


def _budget_run(**training):
    return dict(
        data={"dataset": "digits", "clients": 4, "partition": {"kind": "iid"}},
        model={"name": "logreg"},
        training={"batch_size": 32, **training},
        server={"mode": "sync", "clients_per_round": 4},
        algorithm={"name": "fednova", "record_weights": True},
        stop={"rounds": 3},
        output={"plot": False},
    )


def test_validation_refuses_a_budget_no_client_can_use_and_epochs_without_data():
    timing = dict(_budget_run(local_work={"kind": "time_budget", "seconds": 0.3}), timing_only=True)
    timing["population"] = {"compute": {"samples_per_s": {"dist": "uniform", "low": 10, "high": 100}}}
    # the same rule and sentence as at the run's start (below): the fastest takes 32 / 100 = 0.32 s per step
    with pytest.raises(ConfigError, match=r"local_work.seconds \(0.3\) is shorter than one local step .* takes 0.32 s"):
        scenario(**timing)
    timing["training"]["local_work"]["seconds"] = 0.32
    scenario(**timing)
    with pytest.raises(ConfigError, match="epochs needs the clients' sample counts"):
        scenario(**dict(timing, training={"local_work": {"kind": "epochs", "epochs": 1}}))
    with pytest.raises(ConfigError, match="kind"):
        scenario(**dict(timing, training={"local_work": {"kind": "minutes"}}))


def test_run_start_refuses_a_budget_no_client_can_use(tmp_path, device_trace):
    trace = device_trace([(c, 10.0, 10.0, 50.0, 0.0) for c in range(4)])  # 32 / 10 = 3.2 s per step
    s = scenario(**_budget_run(local_work={"kind": "time_budget", "seconds": 3.0}), population={"device_trace": trace})
    with pytest.raises(ConfigError, match="takes 3.2 s"):
        start.run_scenario(s, tmp_path / "run")


def test_compute_time_and_update_steps_follow_the_budget(tmp_path, device_trace):
    """Speeds 100, 64, 20, 10 samples/s, batch 32 (every client holds about 450 samples), T = 1 s:
    steps floor(100/32) = 3, floor(64/32) = 2, floor(20/32) = 0 -> 1, floor(10/32) = 0 -> 1; compute
    per task 3*32/100 = 0.96, 2*32/64 = 1.0, 32/20 = 1.6 and 32/10 = 3.2 s."""
    trace = device_trace([(0, 100.0, 10.0, 50.0, 0.0), (1, 64.0, 10.0, 50.0, 0.0), (2, 20.0, 10.0, 50.0, 0.0),
                          (3, 10.0, 10.0, 50.0, 0.0)])  # fmt: skip
    s = scenario(**_budget_run(local_work={"kind": "time_budget", "seconds": 1.0}), population={"device_trace": trace})
    run_dir = start.run_scenario(s, tmp_path / "run")
    clients = table(run_dir / "clients.csv")
    assert all(int(r["train_samples"]) >= 32 for r in clients)
    for row, per_task in zip(clients, (0.96, 1.0, 1.6, 3.2)):
        assert int(row["attempts"]) == 3
        assert float(row["compute_s"]) == pytest.approx(3 * per_task, rel=1e-9)
    weights = table(run_dir / "weights.csv")
    assert [int(r["local_steps"]) for r in weights if r["round"] == "1"] == [3, 2, 1, 1]  # Update.num_steps


def test_resume_with_a_time_budget_continues_identically(tmp_path, monkeypatch):
    from tests.runner.test_resume import MODES, _kill_at_event, _same_results

    sections = {k: dict(v) if isinstance(v, dict) else v for k, v in MODES["sync"].items()}
    sections["training"] = {"local_work": {"kind": "time_budget", "seconds": 1.0}}
    sections["algorithm"] = {"name": "fednova", "record_weights": True}
    s = scenario(**sections)
    reference = start.run_scenario(s, tmp_path / "reference")
    steps = {r["local_steps"] for r in table(reference / "weights.csv")}
    assert len(steps) > 2  # the lognormal speeds give clients different step counts
    for n in (5, 40, 90):
        run_dir = tmp_path / f"killed_at_{n}"
        assert _kill_at_event(monkeypatch, s, run_dir, n)
        start.resume_run(run_dir)
        _same_results(reference, run_dir)


# --- executors: mixed step counts, FedProx and train_loss_sq -------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    return build_federation(Data(dataset="digits", clients=12), 0, torch.device("cpu"))


def _trainers(model, fed, training):
    return [cls(model, fed, training, 0) for cls in (SequentialTrainer, BatchedTrainer, FusedTrainer)]


@pytest.mark.parametrize("extra", [{}, {"prox_mu": 0.5}, {"prox_mu": 0.1, "momentum": 0.9, "weight_decay": 1e-3}])
def test_executors_agree_on_mixed_step_counts_prox_and_loss_squares(digits, extra):
    torch.manual_seed(0)
    model = build_model("mlp", digits.input_shape, digits.num_classes, hidden=16)
    w0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    bases = [w0 + 0.01 * torch.randn_like(w0) for _ in range(2)]
    jobs = [TrainingJob(c, c % 2, c % 3, steps) for c, steps in enumerate([1, 4, 2, 7, 3, 1, 5, 2])]
    training = Training(lr=0.1, batch_size=16, **extra)
    results = [t.run([bases[j.base_version] for j in jobs], jobs) for t in _trainers(model, digits, training)]
    reference = results[0]
    for other in results[1:]:
        for job, a, b in zip(jobs, reference, other):
            assert b.num_steps == a.num_steps == job.steps
            assert (a.delta - b.delta).abs().max() <= TOL
            assert b.train_loss == pytest.approx(a.train_loss, abs=TOL)
            assert b.train_loss_sq == pytest.approx(a.train_loss_sq, abs=TOL)
            assert a.train_loss_sq >= a.train_loss**2 - TOL  # E[l^2] >= E[l]^2 per batch, and over steps


def test_loss_square_of_a_zero_linear_model_is_log_classes_squared(digits):
    """All-zero logistic regression: every logit is 0, so every sample's loss is ln(10) at step 0; one
    step -> train_loss = ln 10 and train_loss_sq = (ln 10)^2 = 5.3019..."""
    model = build_model("logreg", digits.input_shape, digits.num_classes)
    zero = torch.zeros(sum(p.numel() for p in model.parameters()))
    for trainer in _trainers(model, digits, Training(lr=0.1, batch_size=8)):
        (result,) = trainer.run(zero, [TrainingJob(3, 0, 0, 1)])
        assert result.train_loss == pytest.approx(math.log(10), abs=1e-6)
        assert result.train_loss_sq == pytest.approx(math.log(10) ** 2, abs=1e-5)


def test_loss_square_is_the_mean_of_squared_per_sample_losses(digits):
    """Two steps by hand on a linear model: the mean over steps of the batch mean of loss_k^2."""
    from asyncfl.learn.trainer import minibatch_positions

    torch.manual_seed(1)
    model = build_model("logreg", digits.input_shape, digits.num_classes)
    w = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(lr=0.5, batch_size=8)
    idx = digits.client_train[2]
    batches = idx[torch.from_numpy(minibatch_positions(0, 2, 0, len(idx), 2, 8))]
    weight, bias = w[:-10].view(10, -1), w[-10:]
    squares = []
    for batch in batches:
        x, y = digits.features[batch].flatten(1), digits.labels[batch]
        logits = (x @ weight.T + bias).requires_grad_(True)
        each = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        squares.append(float(each.detach().square().mean()))
        (g,) = torch.autograd.grad(each.mean(), logits)
        weight, bias = weight - 0.5 * g.T @ x, bias - 0.5 * g.sum(0)
    for trainer in _trainers(model, digits, training):
        (result,) = trainer.run(w, [TrainingJob(2, 0, 0, 2)])
        assert result.train_loss_sq == pytest.approx(sum(squares) / 2, abs=1e-5)


def test_job_book_checkpoints_keep_the_loss_square(digits):
    from asyncfl.learn.jobs import JobBook

    model = build_model("logreg", digits.input_shape, digits.num_classes)
    zero = torch.zeros(sum(p.numel() for p in model.parameters()))
    book = JobBook(SequentialTrainer(model, digits, Training(batch_size=8), 0))
    book.publish(0, zero)
    for client in (1, 2):
        book.submit(TrainingJob(client, 0, 0, 1))
    book.result(1, 0)
    book.done[(2, 0)] = book.trainer.run(zero, [TrainingJob(2, 0, 0, 1)])[0]  # computed, not yet taken
    restored = JobBook(book.trainer)
    restored.restore(book.state())
    assert restored.result(2, 0).train_loss_sq == pytest.approx(math.log(10) ** 2, abs=1e-5)
    old = book.state()
    old["done"] = {key: value[:3] for key, value in old["done"].items()}  # a checkpoint from before the field
    restored.restore(old)
    assert math.isnan(restored.result(2, 0).train_loss_sq)
