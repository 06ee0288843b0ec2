"""pfl-research's side of ``bench_pfl.py``: FedAvg in pfl's PyTorch simulation on a workload file.

Runs in pfl's own Python (see ``bench_pfl.py``: it needs ``pfl[pytorch]``, not asyncfl), alone or under
``torchrun --nproc_per_node N``: pfl then splits each round's cohort across the N processes and all-reduces
the summed updates (gloo on the CPU).  The workload file (written by ``bench_pfl.py`` from asyncfl's own
federation) holds every client's training samples, the test set and the initial parameters, so both sides
train the same model from the same weights on the same arrays.

Local training: ``local_num_epochs`` epochs of batches of ``batch_size``, a fresh SGD optimizer per client
(pfl's own loop); the server: pfl's ``FederatedAveraging`` with ``WeightByDatapoints`` (asyncfl's
``weighting: samples``) and a central SGD of learning rate 1 (the averaged update applied as is).  Every
client holds fewer samples than a batch in these workloads, so an epoch is one step; the script refuses a
workload where that is not so, since asyncfl's ``local_steps`` would then differ from pfl's epochs.

Prints one line ``RESULT {json}`` (rank 0): wall and CPU seconds of pfl's ``algorithm.run``, client-steps,
test accuracy after the last round, pfl and torch versions, the process count.
"""

import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
from importlib.metadata import version  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

from pfl.aggregate.simulate import SimulatedBackend  # noqa: E402
from pfl.aggregate.weighting import WeightByDatapoints  # noqa: E402
from pfl.algorithm import FederatedAveraging, NNAlgorithmParams  # noqa: E402
from pfl.data.federated_dataset import FederatedDataset  # noqa: E402
from pfl.data.sampling import get_user_sampler  # noqa: E402
from pfl.hyperparam import NNTrainHyperParams  # noqa: E402
from pfl.internal.ops.selector import get_default_framework_module  # noqa: E402
from pfl.metrics import Weighted  # noqa: E402
from pfl.model.pytorch import PyTorchModel  # noqa: E402


class Classifier(nn.Sequential):
    """asyncfl's model as an ``nn.Sequential`` of the same layers (so its parameter names match), with the
    ``loss`` and ``metrics`` methods pfl calls."""

    def loss(self, x, y, eval=False):  # noqa: A002 (pfl's keyword)
        return nn.functional.cross_entropy(self(x), y.long())  # pfl hands labels over as float32

    @torch.no_grad()
    def metrics(self, x, y, eval=False):  # noqa: A002
        logits = self(x)
        correct = (logits.argmax(1) == y.long()).sum().item()
        return {"accuracy": Weighted(correct, len(y))}


def build_model(name: str, input_shape: tuple[int, ...]) -> Classifier:
    """asyncfl's ``mlp`` (hidden 200) or ``lenet5`` (``asyncfl/learn/models``), layer for layer."""
    if name == "mlp":
        return Classifier(nn.Flatten(), nn.Linear(math.prod(input_shape), 200), nn.ReLU(), nn.Linear(200, 10))
    channels, height, _ = input_shape
    body = nn.Sequential(
        nn.Conv2d(channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5, padding=0 if height >= 16 else 2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
    )  # fmt: skip
    flat = body(torch.zeros(1, *input_shape)).shape[1]
    return Classifier(body, nn.Linear(flat, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def load_workload(path: str):
    """(per-client (x, y) arrays, test x, test y, initial state dict, settings) of a ``bench_pfl.py`` file."""
    raw = np.load(path)
    settings = json.loads(str(raw["settings"]))
    bounds = raw["offsets"]
    clients = [(raw["x"][a:b], raw["y"][a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    state = {k[len("param:") :]: torch.from_numpy(raw[k]) for k in raw.files if k.startswith("param:")}
    return clients, torch.from_numpy(raw["test_x"]), torch.from_numpy(raw["test_y"]), state, settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", help="the .npz file bench_pfl.py wrote")
    args = parser.parse_args()
    clients, test_x, test_y, state, settings = load_workload(args.workload)
    if max(len(y) for _, y in clients) > settings["batch_size"]:
        raise SystemExit("a client holds more samples than a batch: pfl's epochs would not be asyncfl's steps")
    module = build_model(settings["model"], tuple(test_x.shape[1:]))
    module.load_state_dict(state)
    model = PyTorchModel(
        model=module,
        local_optimizer_create=torch.optim.SGD,
        central_optimizer=torch.optim.SGD(module.parameters(), lr=1.0),
    )
    user_ids = list(range(len(clients)))
    data = {k: [x, y] for k, (x, y) in enumerate(clients)}
    # minimize_reuse over all users with a cohort of all of them: every client every round, as in asyncfl
    training = FederatedDataset.from_slices(data, get_user_sampler("minimize_reuse", user_ids))
    backend = SimulatedBackend(training_data=training, val_data=None, postprocessors=[WeightByDatapoints()])
    rounds = settings["rounds"]
    algorithm_params = NNAlgorithmParams(
        central_num_iterations=rounds, evaluation_frequency=rounds + 1, train_cohort_size=len(clients),
        val_cohort_size=None,
    )  # fmt: skip
    train_params = NNTrainHyperParams(
        local_num_epochs=settings["local_steps"], local_learning_rate=settings["lr"],
        local_batch_size=settings["batch_size"],
    )  # fmt: skip
    start, start_cpu = time.perf_counter(), time.process_time()
    FederatedAveraging().run(algorithm_params, backend, model, train_params, send_metrics_to_platform=False)
    train_s, loop_cpu_s = time.perf_counter() - start, time.process_time() - start_cpu
    distributed = get_default_framework_module().distributed
    if distributed.global_rank != 0:
        return
    module.eval()
    with torch.no_grad():
        accuracy = (module(test_x).argmax(1) == test_y).float().mean().item()
    steps = rounds * len(clients) * settings["local_steps"]
    record = {
        "train_s": train_s, "loop_cpu_s": loop_cpu_s, "client_steps": steps, "accuracy": accuracy,
        "processes": distributed.world_size, "pfl": version("pfl"), "torch": torch.__version__,
        "threads": torch.get_num_threads(), "process_s": time.perf_counter() - T_START,
    }  # fmt: skip
    print("RESULT " + json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
