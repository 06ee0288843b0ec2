"""FedProx (Li et al., MLSys 2020, eq. 2): ``training.prox_mu`` adds mu * (w - w_global) to every local
gradient, in every executor, under any aggregation rule."""

from __future__ import annotations

import pytest
import torch
from conftest import run, table

from asyncfl.config.schema import Data
from asyncfl.learn.batched import BatchedTrainer, FusedTrainer, masked_sgd_step
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob, minibatch_positions, sgd_step
from asyncfl.learn.training import Training


def test_one_step_by_hand():
    """w = [1, 2], w_global = [0, 0], grad = [0.5, -1], mu = 0.1, lr = 0.5:
    grad + mu (w - w_global) = [0.6, -0.8]; w1 = w - 0.5 * [0.6, -0.8] = [0.7, 2.4]."""
    cfg = Training(lr=0.5, prox_mu=0.1)
    w, wg, grad = torch.tensor([1.0, 2.0]), torch.zeros(2), torch.tensor([0.5, -1.0])
    w1, _ = sgd_step(w, grad, None, cfg, wg)
    assert torch.allclose(w1, torch.tensor([0.7, 2.4]))
    rows, active = torch.stack([w, w]), torch.tensor([[True], [False]])
    stepped, _ = masked_sgd_step(rows.clone(), torch.stack([grad, grad]), None, cfg, active, torch.zeros(2, 2))
    assert torch.allclose(stepped, torch.tensor([[0.7, 2.4], [1.0, 2.0]]))  # the inactive row does not move


@pytest.fixture(scope="module")
def digits():
    return build_federation(Data(dataset="digits", clients=10), 0, torch.device("cpu"))


def test_two_steps_on_a_linear_model_by_hand(digits):
    """Step 1 starts at the global model, where the proximal term is 0: w1 = w0 - lr g(w0); step 2:
    w2 = w1 - lr (g(w1) + mu (w1 - w0)), g the mean cross-entropy gradient of the step's minibatch."""
    torch.manual_seed(0)
    model = build_model("logreg", digits.input_shape, digits.num_classes)
    w0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    lr, mu = 0.5, 2.0
    idx = digits.client_train[4]
    batches = idx[torch.from_numpy(minibatch_positions(0, 4, 1, len(idx), 2, 16))]

    def grad(w, batch):
        w = w.clone().requires_grad_(True)
        logits = digits.features[batch].flatten(1) @ w[:-10].view(10, -1).T + w[-10:]
        (g,) = torch.autograd.grad(torch.nn.functional.cross_entropy(logits, digits.labels[batch]), w)
        return g

    w1 = w0 - lr * grad(w0, batches[0])
    w2 = w1 - lr * (grad(w1, batches[1]) + mu * (w1 - w0))
    plain = w1 - lr * grad(w1, batches[1])
    assert (w2 - plain).abs().max() > 1e-3  # the term matters at this mu
    training = Training(lr=lr, batch_size=16, prox_mu=mu)
    for cls in (SequentialTrainer, BatchedTrainer, FusedTrainer):
        (result,) = cls(model, digits, training, 0).run(w0, [TrainingJob(4, 0, 1, 2)])
        assert (result.delta - (w2 - w0)).abs().max() <= 1e-5, cls.__name__


def test_the_proximal_term_pulls_towards_the_global_model(digits):
    torch.manual_seed(0)
    model = build_model("mlp", digits.input_shape, digits.num_classes, hidden=16)
    w0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    jobs = [TrainingJob(c, 0, 0, 20) for c in range(4)]
    norms = []
    for mu in (0.0, 0.5, 5.0):
        results = SequentialTrainer(model, digits, Training(lr=0.1, prox_mu=mu), 0).run(w0, jobs)
        norms.append([float(r.delta.norm()) for r in results])
    for client in range(4):
        assert norms[0][client] > norms[1][client] > norms[2][client]


@pytest.mark.parametrize("executor", ["sequential", "batched", "fused"])
def test_prox_with_an_async_rule_runs_alike_in_every_executor(tmp_path, executor):
    sections = dict(
        data={"dataset": "digits", "clients": 8},
        model={"name": "mlp"},
        training={"local_steps": 3, "prox_mu": 0.3, "local_work": {"kind": "epochs", "epochs": 0.1}},
        population={"compute": {"samples_per_s": {"dist": "lognormal", "median": 40, "sigma": 0.8}}},
        server={"mode": "k_async", "k": 2, "concurrency": 4},
        algorithm={"name": "fedbuff"},
        trainer={"executor": executor},
        stop={"rounds": 6},
        output={"plot": False},
    )
    rows = table(run(tmp_path, executor, **sections) / "metrics.csv")
    reference = table(run(tmp_path, "reference", **{**sections, "trainer": {"executor": "sequential"}}) / "metrics.csv")
    assert len(rows) == len(reference) == 7
    for a, b in zip(rows, reference):
        assert float(a["test_accuracy"]) == pytest.approx(float(b["test_accuracy"]), abs=1e-3)
        assert float(a["test_loss"]) == pytest.approx(float(b["test_loss"]), abs=1e-4)
