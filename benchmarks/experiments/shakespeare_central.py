"""Central baseline for LEAF-style Shakespeare: one plain training loop over every training window of the chosen
roles (what one client holding all the data would do), on the same data and model as the study.

    python benchmarks/experiments/shakespeare_central.py                          # the study's data, 64 units
    python benchmarks/experiments/shakespeare_central.py --units 256 --steps 1000 --seeds 0   # LEAF's model

Data: ``data.dataset: shakespeare`` with ``--clients`` roles (role_seed 0), test fraction 0.1 and the test cap
of the study (``--test-cap``, 20 windows a role), so the test set is the study's global one.  Training: plain
SGD (lr ``--lr``, LEAF's 0.8), minibatches of ``--batch`` drawn uniformly from the pooled training windows
with numpy's generator seeded by the seed, ``--steps`` steps; top-1 next-character accuracy on the test set
every ``--every`` steps.  Prints one line per evaluation and a summary per seed (the wall time too).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from asyncfl.config.schema import Data
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.models.lstm_shakespeare import LstmShakespeare


@torch.no_grad()
def accuracy(model, fed) -> float:
    model.eval()
    idx = fed.test_indices
    hits = (model(fed.features[idx]).argmax(1) == fed.labels[idx]).sum()
    model.train()
    return int(hits) / len(idx)


def run(args, seed: int) -> list[tuple[int, float]]:
    data = Data.model_validate({"dataset": "shakespeare", "clients": args.clients, "test_fraction": 0.1,
                                "shakespeare": {"role_seed": 0, "test_cap": args.test_cap}})  # fmt: skip
    fed = build_federation(data, seed, torch.device("cpu"))
    pool = torch.cat(fed.client_train).numpy()
    torch.manual_seed(seed)
    model = build_model("lstm_shakespeare", (80,), 80, params=LstmShakespeare(units=args.units))
    optimiser = torch.optim.SGD(model.parameters(), lr=args.lr)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    curve = [(0, accuracy(model, fed))]
    for step in range(1, args.steps + 1):
        idx = torch.from_numpy(pool[rng.integers(len(pool), size=args.batch)])
        loss = torch.nn.functional.cross_entropy(model(fed.features[idx]), fed.labels[idx])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % args.every == 0 or step == args.steps:
            curve.append((step, accuracy(model, fed)))
            print(f"  seed {seed} step {step}: test accuracy {curve[-1][1]:.3f} (loss {float(loss):.3f})", flush=True)
    test_labels = fed.labels[fed.test_indices]
    majority = float(test_labels.bincount().max()) / len(test_labels)  # always answering a space
    print(f"seed {seed}: {len(pool)} training windows of {args.clients} roles, {len(fed.test_indices)} test windows "
          f"(always the most frequent character: {majority:.3f}); "
          f"{args.steps} steps of batch {args.batch} = {args.steps * args.batch / len(pool):.2f} epochs; "
          f"wall time {time.perf_counter() - start:.0f} s")  # fmt: skip
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--test-cap", type=int, default=20)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.8)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    finals = [run(args, seed)[-1][1] for seed in args.seeds]
    print(f"central, LSTM 2 x {args.units}, seeds {args.seeds}: final test accuracy "
          f"{', '.join(f'{a:.3f}' for a in finals)} (mean {np.mean(finals):.3f}); "
          f"wall time {time.perf_counter() - start:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
