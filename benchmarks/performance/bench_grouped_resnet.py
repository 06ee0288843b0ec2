"""ResNet-18-GN batched across clients as ONE wide network of grouped convolutions, against the sequential
trainer's loop, on the CPU (issue 48 item 4: "channels-last grouped convolutions" as a lever for "ResNet-18-GN
batched beats sequential on this CPU").

A cohort of J clients, each with its own weights, is the same arithmetic as one network J times as wide whose
every convolution has ``groups=J`` (client j's channels only see client j's), whose GroupNorm has J times the
groups (each group stays inside one client's channels) and whose classifier is a grouped 1x1 convolution: the
J clients' minibatches (batch B each) go in side by side as the channels of one [B, 3J, 32, 32] input, and one
backward pass gives every client its own gradient.  This is the trick ``ConvFusedTrainer`` uses for LeNet-5 and
LEAF's CNN; here it is timed for ResNet-18-GN (asyncfl's ``resnet18``: torchvision's with GroupNorm and a 3x3
stem) before any trainer is built on it:

* ``sequential`` -- the model itself, one client after the other (autograd, then SGD on every parameter),
  as ``SequentialTrainer`` does;
* ``grouped`` -- the wide network, contiguous layout;
* ``grouped, channels-last`` -- the wide network and its input in channels-last layout.

Every variant runs in this process, one torch thread (``--threads``), taking turns ``--repeats`` times (best
kept); the images are Gaussian noise (a step's cost does not depend on the pixels).  Prints client-steps/s and
each grouped variant over sequential.

    python benchmarks/performance/bench_grouped_resnet.py --markdown docs/results/grouped_resnet.md
    python benchmarks/performance/bench_grouped_resnet.py --quick     # a smoke test, seconds
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch
from torch import nn

from asyncfl.learn.models import build_model

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from benchmarks.tools.quiet_machine import add_force_argument, check_load, device_description  # noqa: E402

IMAGE, CLASSES, LR = (3, 32, 32), 10, 0.01


def widened(model: nn.Module, clients: int) -> nn.Module:
    """A copy of ``model`` ``clients`` times as wide, every client starting from ``model``'s weights (a cohort
    from one base): grouped convolutions, GroupNorm with ``clients`` times the groups, the classifier as a
    grouped 1x1 convolution."""
    wide = copy.deepcopy(model)
    for module in list(wide.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Conv2d):
                new = nn.Conv2d(clients * child.in_channels, clients * child.out_channels, child.kernel_size,
                                child.stride, child.padding, groups=clients, bias=child.bias is not None)  # fmt: skip
            elif isinstance(child, nn.GroupNorm):
                new = nn.GroupNorm(clients * child.num_groups, clients * child.num_channels)
            elif isinstance(child, nn.Linear):
                new = nn.Conv1d(clients * child.in_features, clients * child.out_features, 1, groups=clients)
            else:
                continue
            with torch.no_grad():  # client j's block of every tensor: the base's (groups split dimension 0)
                for own, wider in zip(child.parameters(), new.parameters()):
                    wider.copy_(own.reshape(-1, *wider.shape[1:]).repeat(clients, *[1] * (wider.dim() - 1)))
            setattr(module, name, new)
    return wide


def wide_logits(wide: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """torchvision ResNet's forward on the wide network: [B, 3J, H, W] -> [B, J * classes]."""
    x = wide.maxpool(wide.relu(wide.bn1(wide.conv1(x))))
    x = wide.layer4(wide.layer3(wide.layer2(wide.layer1(x))))
    return wide.fc(torch.flatten(wide.avgpool(x), 1).unsqueeze(-1)).squeeze(-1)


def sgd(model: nn.Module) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p.sub_(LR * p.grad)
            p.grad = None


def timed(step, repeats: int) -> float:
    """The best seconds of ``step`` over ``repeats`` calls (after one to warm up)."""
    step()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    return best


def measure(clients: int, batch: int, repeats: int) -> dict:
    torch.manual_seed(0)
    model = build_model("resnet18", IMAGE, CLASSES)
    x, y = torch.randn(batch, *IMAGE), torch.randint(0, CLASSES, (batch,))
    xs, ys = torch.randn(batch, clients * IMAGE[0], *IMAGE[1:]), torch.randint(0, CLASSES, (batch * clients,))
    wide = widened(model, clients)
    wide_cl = widened(model, clients).to(memory_format=torch.channels_last)
    xs_cl = xs.contiguous(memory_format=torch.channels_last)

    def sequential() -> None:
        for _ in range(clients):
            nn.functional.cross_entropy(model(x), y).backward()
            sgd(model)

    def grouped(net: nn.Module, inputs: torch.Tensor):
        def step() -> None:
            logits = wide_logits(net, inputs).view(batch, clients, CLASSES).reshape(-1, CLASSES)
            nn.functional.cross_entropy(logits, ys, reduction="sum").backward()  # each client's sum: its own
            sgd(net)

        return step

    steps = {"sequential": sequential, "grouped": grouped(wide, xs), "grouped, channels-last": grouped(wide_cl, xs_cl)}
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(repeats):  # taking turns: a busy moment falls on every variant alike
        for name, step in steps.items():
            best[name] = min(best[name], timed(step, 1))
    return {name: clients / seconds for name, seconds in best.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[4, 10])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 clients, batch 2, one repeat: a smoke test")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    add_force_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.batch, args.repeats = [2], 2, 1
    load = check_load(args.force or args.quick or args.markdown is None, str(args.markdown or "nothing"))
    torch.set_num_threads(args.threads)
    lines = [
        f"ResNet-18-GN client steps per second on {device_description(torch.device('cpu'))}, "
        f"{args.threads} torch thread(s), batch {args.batch} of 3x32x32 per client, best of {args.repeats}:",
        "",
        "| clients | sequential | grouped | grouped / sequential | grouped, channels-last "
        "| channels-last / sequential |",
        "|---|---|---|---|---|---|",
    ]
    for clients in args.clients:
        r = measure(clients, args.batch, args.repeats)
        seq = r["sequential"]
        lines.append(
            f"| {clients} | {seq:.2f} | {r['grouped']:.2f} | {r['grouped'] / seq:.2f}× | "
            f"{r['grouped, channels-last']:.2f} | {r['grouped, channels-last'] / seq:.2f}× |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n\n" + load.note().strip() + "\n"
    print(text)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
