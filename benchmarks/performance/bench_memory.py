"""Peak memory of the per-client update store (MIFA, FedAR, FedVARP, FL-FDMS) against its raw size.

Covers: 1,000 clients with LeNet-5 on CIFAR-10-shaped inputs (83,126 parameters), float32 and
float16 stores on the CPU.  Each store is built and filled (put every client's row, then one
full-population ``sum()``) in a fresh subprocess; the peak resident set (VmHWM) above the baseline
taken just before building it, after filling and after the sum, is compared with
clients x parameters x bytes per number.

    python benchmarks/performance/bench_memory.py [--clients 1000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

CHILD = """
import sys, torch
from asyncfl.algorithms.memory import UpdateStore
from asyncfl.algorithms.base import MemoryStore
from asyncfl.learn.models import build_model
def hwm():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM'):
            return int(line.split()[1]) * 1024
clients, dtype = int(sys.argv[1]), sys.argv[2]
model = build_model('lenet5', (3, 32, 32), 10)
like = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
update = torch.randn_like(like)
base = hwm()
store = UpdateStore(clients, like.numel(), like, MemoryStore(device='cpu', dtype=dtype))
for c in range(clients):
    store.put(c, update)
filled = hwm() - base
total = store.sum()
print(like.numel(), store.nbytes(), filled, hwm() - base)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1000)
    args = parser.parse_args()
    print(f"{'dtype':9} {'clients':>7} {'params':>7} {'raw MiB':>8} {'filled/raw':>10} {'after sum/raw':>13}")
    for dtype in ("float32", "float16"):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.clients), dtype], check=True, capture_output=True, text=True
        ).stdout.split()
        dim, raw, filled, summed = (int(x) for x in out)
        print(f"{dtype:9} {args.clients:>7} {dim:>7} {raw / 2**20:>8.1f} {filled / raw:>10.2f} {summed / raw:>13.2f}")


if __name__ == "__main__":
    main()
