"""asyncfl next to pfl-research (Apple's ``pfl``, PyTorch simulation) on the same FedAvg workloads.

Covers issue 48 item 5: the same model, data split, initial weights, clients per round, local steps,
batch size, learning rate and rounds in pfl and in asyncfl, for

* ``mlp`` -- the FLGo anchor workload (``/work/shared/anchors/flgo/RESULTS.md``): sklearn digits (8x8),
  the anchor's 100 clients (``partition.json``, 12-20 samples each) and its 360 test samples, MLP 64-200-10;
* ``lenet5`` -- LeNet-5 on 28x28 images: asyncfl has no 28x28 data offline (``mnist`` and
  ``fashion_mnist`` are downloads), so the same digits, each pixel repeated 3x3 and padded by 2 to 28x28
  (MNIST's own framing of a 20x20 digit), are written as MNIST's idx files and read by ``data.dataset:
  mnist``; same clients, same test set.

Both: FedAvg weighted by samples, every client every round, 5 local SGD steps of batch 32 (lr 0.05),
30 rounds = 15,000 client-steps.  Every client holds fewer samples than a batch, so each step is a
full-batch step and the minibatch order cannot differ between the two sides.  pfl is fed asyncfl's own
arrays and initial weights (asyncfl builds the federation and model; they are written to an ``.npz`` that
``pfl_fedavg.py`` reads), so the final test accuracies should agree to float rounding.

Sides, each a fresh process, ``--repeats`` times interleaved, best kept (the machine is shared), one
torch thread each (``OMP_NUM_THREADS=1``, ``torch.set_num_threads(1)``):

* ``pfl`` -- ``pfl_fedavg.py`` in pfl's own Python, with 1 process, and with 2 under ``torchrun`` (pfl
  splits each cohort across the processes and all-reduces the sums over gloo); "loop" is pfl's
  ``algorithm.run``;
* ``asyncfl (in process)`` -- the scenario in a child process that times the trainer's ``run`` calls
  ("training") and ``Simulation.run`` less its end-of-run files ("loop": training plus the clock world,
  aggregation, recording and evaluation);
* ``asyncfl (command)`` -- ``python -m asyncfl run`` as a user runs it: timing on, events and figures on;
* ``PyTorch alone, shared weights`` -- :func:`ceiling_child`: the same model trained on every client's samples
  at once as ONE minibatch per local step (one set of weights for the whole cohort, PyTorch's own modules,
  channels-last where that is faster): the same arithmetic per round as the cohort's, as centralized training
  would run it.  A reference, not a bound (asyncfl's grouped-convolution trainer beat it on LeNet-5), with the
  arithmetic of one client step (torch's ``FlopCounterMode``) and this core's matrix-product rate (a 2048 x 2048
  float32 product): what a target in "times pfl" asks of the CPU, in GFLOP/s;
* ``asyncfl, N workers`` -- :func:`asyncfl_with_workers`, the place for ``trainer.workers`` (being built):
  skipped, and said so, while the installed asyncfl refuses the key.

pfl lives in its own virtual environment, outside the repository and never in asyncfl's Python
(``--pfl-python``, default ``$PFL_PYTHON`` or ``/work/venvs/pfl/bin/python``; ``--make-venv`` creates it
there)::

    python -m venv /work/venvs/pfl
    /work/venvs/pfl/bin/pip install torch==2.14.1 torchvision==0.29.1
    /work/venvs/pfl/bin/pip install "pfl[pytorch]==0.6.*"

    python benchmarks/performance/bench_pfl.py [--models mlp lenet5] [--workers 1 2] [--repeats 3]
        [--quick] [--markdown docs/results/pfl.md] [--force]

``--quick``: 2 rounds, one repeat, one process a side: a smoke test (under a minute), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load, cores, processor  # noqa: E402
from benchmarks.tools.side_by_side import anchor_split, run_process  # noqa: E402

PFL_SIDE = Path(__file__).with_name("pfl_fedavg.py")
DEFAULT_PFL_PYTHON = "/work/venvs/pfl/bin/python"
LOCAL_STEPS, BATCH, LR, ROUNDS = 5, 32, 0.05, 30
MODEL_TITLE = {
    "mlp": "FLGo MLP workload: digits 8x8, MLP 64-200-10",
    "lenet5": "LeNet-5 on 28x28: digits upscaled 3x3 and padded to 28x28",
}


# ---- the workloads: asyncfl's scenario, its data files, and the same arrays for pfl -----------------------


def write_mnist_like(out: Path) -> None:
    """The anchor's digits split as MNIST's four idx files under ``out/MNIST/raw`` (train, then test): 8x8
    pixels 0..16 scaled to 0..255, each repeated 3x3 and padded by 2 to 28x28."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    train, test = anchor_split()
    images = np.rint(bunch.data.reshape(-1, 8, 8) * (255 / 16)).astype(np.uint8)
    images = np.pad(np.kron(images, np.ones((1, 3, 3), dtype=np.uint8)), ((0, 0), (2, 2), (2, 2)))
    raw = out / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, idx in (("train", train), ("t10k", test)):
        write_idx(raw / f"{prefix}-images-idx3-ubyte", images[idx])
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", bunch.target[idx].astype(np.uint8))


def write_idx(path: Path, array: np.ndarray) -> None:
    """An unsigned-byte idx file (LeCun's format: magic 0x08 << 8 | ndim, the dimensions big-endian)."""
    header = (0x0800 | array.ndim).to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    path.write_bytes(header + np.ascontiguousarray(array).tobytes())


def partition_file(anchor: Path, model: str, out: Path) -> Path:
    """The anchor's clients and test split as a ``file`` partition with a ``test`` list: indices into all
    samples in source order (digits: ``load_digits`` order; the idx files: their training file, then test)."""
    train, test = anchor_split()
    clients = json.loads((anchor / "partition.json").read_text(encoding="utf-8"))["clients"]
    if model == "mlp":
        content = {"clients": [train[np.asarray(c)].tolist() for c in clients], "test": sorted(test.tolist())}
    else:  # the idx training file is the anchor's training split in its order, the test file follows it
        content = {"clients": clients, "test": list(range(len(train), len(train) + len(test)))}
    out.write_text(json.dumps(content), encoding="utf-8")
    return out


def asyncfl_sets(model: str, work: Path, rounds: int) -> list[str]:
    """``--set`` overrides of the anchor's scenario: the model and data, the partition, and the outputs a
    user gets (events and figures on)."""
    sets = [
        "device=cpu",
        f"data.partition={{kind: file, path: {json.dumps(str(work / f'partition_{model}.json'))}}}",
        "data.test_fraction=0",
        f"stop.rounds={rounds}",
        f"eval.every_rounds={rounds}",
        "output.events=all",
        "output.plot=true",
    ]
    if model == "lenet5":
        sets += ["model.name=lenet5", "data.dataset=mnist", f"data.data_dir={json.dumps(str(work / 'data'))}"]
    return sets


def write_pfl_workload(scenario: Path, sets: list[str], model: str, rounds: int, out: Path) -> dict:
    """asyncfl's federation (every client's training samples, the test set) and initial weights as an
    ``.npz`` for ``pfl_fedavg.py``; returns its mean client size and test-set size."""
    import torch

    from asyncfl.config import load_scenario
    from asyncfl.learn.federation import build_federation
    from asyncfl.runner.parts import initial_model

    s = load_scenario(scenario, sets)
    fed = build_federation(s.data, s.seed, torch.device("cpu"))
    x = torch.cat([fed.features[c] for c in fed.client_train]).numpy()
    y = torch.cat([fed.labels[c] for c in fed.client_train]).numpy()
    offsets = np.cumsum([0] + [len(c) for c in fed.client_train])
    params = {f"param:{k}": v.numpy() for k, v in initial_model(s, fed).state_dict().items()}
    settings = {"model": model, "rounds": rounds, "local_steps": LOCAL_STEPS, "batch_size": BATCH, "lr": LR}
    np.savez(
        out, x=x, y=y, offsets=offsets, test_x=fed.features[fed.test_indices].numpy(),
        test_y=fed.labels[fed.test_indices].numpy(), settings=json.dumps(settings), **params,
    )  # fmt: skip
    return {"client_size": len(x) / fed.num_clients, "test_size": len(fed.test_indices)}


def prepare(anchor: Path, work: Path, model: str, rounds: int) -> dict:
    """Write ``model``'s data files, partition and pfl workload under ``work``."""
    if model == "lenet5":
        write_mnist_like(work / "data")
    partition_file(anchor, model, work / f"partition_{model}.json")
    scenario = anchor / "asyncfl_flgo_mlp.yaml"
    return write_pfl_workload(scenario, asyncfl_sets(model, work, rounds), model, rounds, work / f"{model}.npz")


# ---- asyncfl in process ---------------------------------------------------------------------------------


def child(scenario: str, sets: list[str]) -> None:
    """asyncfl in process, one torch thread: print one JSON line with training, loop and end-of-run seconds."""
    import torch

    torch.set_num_threads(1)
    from asyncfl.config import load_scenario
    from asyncfl.runner.simulation import Simulation

    spent = {"train": 0.0, "train_cpu": 0.0, "finish": 0.0, "finish_cpu": 0.0, "calls": 0}
    out = Path(tempfile.mkdtemp()) / "run"
    out.mkdir()
    sim = Simulation(load_scenario(Path(scenario), sets), out)
    trainer = sim.learner.jobs.trainer
    trainer.run = timed(trainer.run, spent, "train")
    sim.finish = timed(sim.finish, spent, "finish")
    start, start_cpu = time.perf_counter(), time.process_time()
    sim.run()
    run_s, run_cpu_s = time.perf_counter() - start, time.process_time() - start_cpu
    summary = read_summary(out)
    shutil.rmtree(out.parent)
    record = {
        "train_s": spent["train"], "loop_s": run_s - spent["finish"], "finish_s": spent["finish"],
        "train_cpu_s": spent["train_cpu"], "loop_cpu_s": run_cpu_s - spent["finish_cpu"],
        "calls": spent["calls"], "trainer": type(trainer).__name__, "accuracy": summary["final_accuracy"],
        "torch": torch.__version__,
    }  # fmt: skip
    print(json.dumps(record))


def ceiling_child(scenario: str, sets: list[str]) -> None:
    """PyTorch alone, one torch thread: the scenario's model and cohort, every client's samples as one
    minibatch per local step with shared weights (rounds x local steps SGD steps); prints one JSON line with
    the best seconds over the contiguous and channels-last layouts."""
    import torch

    from asyncfl.config import load_scenario
    from asyncfl.learn.federation import build_federation
    from asyncfl.runner.parts import initial_model

    torch.set_num_threads(1)
    s = load_scenario(Path(scenario), sets)
    fed = build_federation(s.data, s.seed, torch.device("cpu"))
    cohort = torch.cat(list(fed.client_train))
    x, y = fed.features[cohort], fed.labels[cohort]
    steps = s.stop.rounds * s.training.local_steps
    best_s, layout = math.inf, ""
    layouts = ["contiguous", "channels-last"] if x.dim() == 4 else ["contiguous"]
    for name in layouts:
        model = initial_model(s, fed)
        inputs = x
        if name == "channels-last":
            model, inputs = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
        optimizer = torch.optim.SGD(model.parameters(), lr=s.training.lr)
        start = time.perf_counter()
        for _ in range(steps):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(inputs), y).backward()
            optimizer.step()
        seconds = time.perf_counter() - start
        if seconds < best_s:
            best_s, layout = seconds, name
    print(
        json.dumps(
            {
                "train_s": best_s,
                "layout": layout,
                "samples": len(cohort),
                "steps": steps,
                "step_flop": step_flop(initial_model(s, fed), x, y),
                "peak_gflops": matmul_gflops(),
            }
        )
    )


def step_flop(model, x, y) -> float:
    """FLOP of one SGD step (forward and backward) of ``model`` on ``x``, by torch's own counter."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.cross_entropy(model(x), y).backward()
    return float(counter.get_total_flops())


def matmul_gflops(size: int = 2048, repeats: int = 5) -> float:
    """This core's float32 matrix-product rate: the best of ``repeats`` size x size products, in GFLOP/s."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def timed(method, spent: dict, key: str):
    """``method`` adding its wall and CPU seconds to ``spent[key]`` and ``spent[key + "_cpu"]`` (and counting
    the trainer's calls)."""

    def wrapper(*args, **kwargs):
        start, start_cpu = time.perf_counter(), time.process_time()
        try:
            return method(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - start
            spent[f"{key}_cpu"] += time.process_time() - start_cpu
            spent["calls"] += key == "train"

    return wrapper


# ---- the sides, one fresh process each ------------------------------------------------------------------


def run_pfl(pfl_python: str, workload: Path, workers: int, cwd: Path) -> dict:
    """pfl on ``workload`` with ``workers`` processes (torchrun when more than one)."""
    command = [pfl_python, str(PFL_SIDE), str(workload)]
    if workers > 1:
        launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={workers}"]
        command = [pfl_python, *launcher, str(PFL_SIDE), str(workload)]
    wall, stdout = run_process(command, threads=1, cwd=cwd)
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT "))
    return {**json.loads(line[len("RESULT ") :]), "wall_s": wall}


def run_asyncfl_child(scenario: Path, sets: list[str], cwd: Path) -> dict:
    command = [sys.executable, __file__, "--child", str(scenario), *[x for s in sets for x in ("--set", s)]]
    wall, stdout = run_process(command, threads=1, cwd=cwd)
    return {**json.loads(stdout.strip().splitlines()[-1]), "wall_s": wall}


def run_ceiling(scenario: Path, sets: list[str], cwd: Path) -> dict:
    command = [sys.executable, __file__, "--ceiling", str(scenario), *[x for s in sets for x in ("--set", s)]]
    wall, stdout = run_process(command, threads=1, cwd=cwd)
    return {**json.loads(stdout.strip().splitlines()[-1]), "wall_s": wall}


def run_asyncfl_command(scenario: Path, sets: list[str], cwd: Path, extra: list[str] = ()) -> dict:
    """``python -m asyncfl run`` as a user runs it; its wall time and final accuracy."""
    out = cwd / "cli_run"
    sets_args = [x for s in [*sets, *extra] for x in ("--set", s)]
    command = [sys.executable, "-m", "asyncfl", "run", str(scenario), "--quiet", *sets_args, "--out", str(out)]
    wall, _ = run_process(command, threads=1, cwd=cwd)
    summary = read_summary(out)
    shutil.rmtree(out)
    return {"wall_s": wall, "accuracy": summary["final_accuracy"], "trainer": summary["trainer"]}


def asyncfl_with_workers(workers: int, scenario: Path, sets: list[str], cwd: Path) -> dict | str:
    """asyncfl with ``trainer.workers: workers`` (issue 48 item 1, built separately): the whole command's
    record, or why it was skipped when the installed asyncfl refuses the key."""
    key = f"trainer.workers={workers}"
    probe = subprocess.run(
        [sys.executable, "-m", "asyncfl", "validate", str(scenario), *[x for s in [*sets, key] for x in ("--set", s)]],
        capture_output=True, text=True, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    if probe.returncode != 0:
        lines = (probe.stderr or probe.stdout).strip().splitlines() or ["(no message)"]
        return f"asyncfl refuses {key}: {lines[-1].strip().rstrip('.')[:300]}"
    return run_asyncfl_command(scenario, sets, cwd, [key])


def best(records: list[dict], key: str) -> dict:
    return min(records, key=lambda r: r[key])


def measure(model: str, args, work: Path) -> dict:
    """Every side on ``model``, ``args.repeats`` times interleaved; the best record of each."""
    scenario = args.anchor / "asyncfl_flgo_mlp.yaml"
    sets = asyncfl_sets(model, work, args.rounds)
    runs: dict[str, list] = {}
    skipped: dict[int, str] = {}
    for repeat in range(args.repeats):
        for workers in args.workers:
            runs.setdefault(f"pfl {workers}", []).append(run_pfl(args.pfl_python, work / f"{model}.npz", workers, work))
        runs.setdefault("asyncfl in process", []).append(run_asyncfl_child(scenario, sets, work))
        runs.setdefault("asyncfl command", []).append(run_asyncfl_command(scenario, sets, work))
        runs.setdefault("ceiling", []).append(run_ceiling(scenario, sets, work))
        for workers in (w for w in args.workers if w > 1 and w not in skipped):
            record = asyncfl_with_workers(workers, scenario, sets, work)
            if isinstance(record, str):
                skipped[workers] = record
            else:
                runs.setdefault(f"asyncfl command {workers}", []).append(record)
        print(f"  {model} repeat {repeat + 1}: " + ", ".join(f"{k} {v[-1]['wall_s']:.1f} s" for k, v in runs.items()))
    # the least CPU time where a loop is timed: on a shared machine it moves less than the wall time
    chosen = {
        name: best(
            records, "loop_cpu_s" if "loop_cpu_s" in records[0] else "train_s" if name == "ceiling" else "wall_s"
        )
        for name, records in runs.items()
    }
    return {"best": chosen, "skipped": skipped}


# ---- the report -----------------------------------------------------------------------------------------


def rate(steps: int, seconds: float) -> str:
    return f"{steps / seconds:,.0f}"


def render(model: str, result: dict, sizes: dict, args) -> str:
    """One markdown table for ``model``: every side's seconds, client-steps/s and accuracy, then the ratios."""
    chosen, steps = result["best"], 100 * LOCAL_STEPS * args.rounds
    inproc, command = chosen["asyncfl in process"], chosen["asyncfl command"]
    lines = [
        f"{MODEL_TITLE[model]}; 100 clients (mean {sizes['client_size']:.2f} samples), all every round, "
        f"{LOCAL_STEPS} steps of batch {BATCH}, lr {LR}, {args.rounds} rounds = {steps:,} client-steps, "
        f"{sizes['test_size']} test samples; one torch thread per process; best of {args.repeats} fresh "
        "processes per side, run side by side:",
        "",
        "| side | loop s | client-steps/s (loop) | loop CPU s | client-steps per CPU s | whole process s | "
        "test accuracy |",
        "|---|---|---|---|---|---|---|",
    ]
    for workers in args.workers:
        pfl = chosen[f"pfl {workers}"]
        lines.append(
            f"| pfl {pfl['pfl']}, {workers} process{'es' if workers > 1 else ''} | {pfl['train_s']:.2f} | "
            f"{rate(steps, pfl['train_s'])} | {pfl['loop_cpu_s']:.2f}{' (rank 0)' if workers > 1 else ''} | "
            f"{rate(steps, pfl['loop_cpu_s']) if workers == 1 else '–'} | {pfl['wall_s']:.2f} | {pfl['accuracy']:.4f} |"
        )
    lines.append(
        f"| asyncfl {inproc['trainer']}, in process | {inproc['loop_s']:.2f} (training {inproc['train_s']:.2f}) | "
        f"{rate(steps, inproc['loop_s'])} (training {rate(steps, inproc['train_s'])}) | {inproc['loop_cpu_s']:.2f} | "
        f"{rate(steps, inproc['loop_cpu_s'])} | {inproc['wall_s']:.2f} | {inproc['accuracy']:.4f} |"
    )
    lines.append(f"| asyncfl, `python -m asyncfl run` (events, figures) | – | – | – | – | {command['wall_s']:.2f} | "
                 f"{command['accuracy']:.4f} |")  # fmt: skip
    ceiling = chosen["ceiling"]
    lines.append(
        f"| PyTorch alone, shared weights: the cohort's {ceiling['samples']:,} samples as one minibatch "
        f"({ceiling['layout']}; a reference, not a simulator) | training {ceiling['train_s']:.2f} | "
        f"training {rate(steps, ceiling['train_s'])} | – | – | – | – |"
    )
    for workers in (w for w in args.workers if w > 1):
        if f"asyncfl command {workers}" in chosen:
            r = chosen[f"asyncfl command {workers}"]
            lines.append(
                f"| asyncfl, `trainer.workers: {workers}` | – | – | – | – | {r['wall_s']:.2f} | {r['accuracy']:.4f} |"
            )
    lines += ["", ratios(model, chosen, args)]
    lines += [f"asyncfl with {w} workers not run: {why}." for w, why in result["skipped"].items()]
    return "\n".join(lines) + "\n"


TARGET = {"mlp": 10.0, "lenet5": 5.0}  # issue 48: asyncfl's loop at least this many times pfl's (one process)


def ratios(model: str, chosen: dict, args) -> str:
    """asyncfl over pfl with one process: loop, training, whole process; the issue's target, met or not."""
    pfl, inproc, command = chosen["pfl 1"], chosen["asyncfl in process"], chosen["asyncfl command"]
    loop, training = pfl["train_s"] / inproc["loop_s"], pfl["train_s"] / inproc["train_s"]
    loop_cpu, whole = pfl["loop_cpu_s"] / inproc["loop_cpu_s"], pfl["wall_s"] / command["wall_s"]
    verdict = "met" if min(loop, loop_cpu) >= TARGET[model] and whole > 1 else "not met"
    text = (
        f"asyncfl over pfl (1 process): loop {loop:.1f}× in wall time, {loop_cpu:.1f}× in CPU time (training alone "
        f"{training:.1f}×), whole process {whole:.1f}× with asyncfl writing its events and figures; issue 48's target "
        f"(loop ≥ {TARGET[model]:.0f}×, whole process ahead): {verdict}."
    )
    ceiling = chosen["ceiling"]
    steps = 100 * LOCAL_STEPS * args.rounds
    per_step = ceiling["step_flop"] / 100  # one client step: the cohort's step over its 100 clients
    achieved = per_step * steps / inproc["train_s"] / 1e9
    needed = per_step * steps * TARGET[model] / pfl["train_s"] / 1e9
    text += (
        f" PyTorch alone, training the cohort's samples as one minibatch with shared weights, is "
        f"{pfl['train_s'] / ceiling['train_s']:.1f}× pfl; asyncfl's training is "
        f"{ceiling['train_s'] / inproc['train_s']:.2f}× that. A client step is {per_step / 1e6:.2f} MFLOP: asyncfl's "
        f"training runs at {achieved:.1f} GFLOP/s, the target's loop would need more than {needed:.1f} GFLOP/s, "
        f"and this core multiplies 2048 x 2048 matrices at {ceiling['peak_gflops']:.0f} GFLOP/s."
    )
    if "pfl 2" in chosen:
        text += f" pfl with 2 processes is {pfl['train_s'] / chosen['pfl 2']['train_s']:.2f}× pfl with 1."
    return text


def versions(pfl: dict, load) -> str:
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    import torch

    return (
        f"Versions: asyncfl {rev.stdout.strip()}{' (modified)' if dirty else ''} with torch {torch.__version__}; "
        f"pfl {pfl['pfl']} with torch {pfl['torch']}; Python {platform.python_version()}. "
        f"Machine: {processor()}, {cores()} cores." + load.note()
    )


def make_venv(where: Path) -> str:
    """Create pfl's virtual environment at ``where`` (the docstring's three commands); its Python."""
    python = where / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "torch==2.14.1", "torchvision==0.29.1"], check=True)
        subprocess.run([*pip, "pfl[pytorch]==0.6.*"], check=True)
    return str(python)


def pfl_missing(python: str) -> str | None:
    """None when ``python`` can import pfl, else why not."""
    if not Path(python).exists():
        return f"{python} does not exist (create it with --make-venv, or give --pfl-python)"
    probe = subprocess.run([python, "-c", "import pfl"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"{python} cannot import pfl: {probe.stderr.strip().splitlines()[-1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchor", type=Path, default=Path("/work/shared/anchors/flgo"))
    parser.add_argument("--pfl-python", default=os.environ.get("PFL_PYTHON", DEFAULT_PFL_PYTHON))
    parser.add_argument("--make-venv", type=Path, help="create pfl's venv here first (if absent) and use it")
    parser.add_argument("--models", nargs="+", choices=sorted(MODEL_TITLE), default=["mlp", "lenet5"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2], help="processes on each side")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--quick", action="store_true", help="2 rounds, 1 repeat, 1 worker: a smoke test")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file (for the docs)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # asyncfl in process: the scenario
    parser.add_argument("--ceiling", help=argparse.SUPPRESS)  # PyTorch alone, shared weights: the scenario
    parser.add_argument("--set", action="append", default=[], help=argparse.SUPPRESS)
    add_force_argument(parser)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.set)
        return
    if args.ceiling:
        ceiling_child(args.ceiling, args.set)
        return
    if args.quick:
        args.rounds, args.repeats, args.workers = 2, 1, [1]
    if 1 not in args.workers:
        parser.error("--workers must include 1 (the ratios are taken against one process)")
    if args.make_venv:
        args.pfl_python = make_venv(args.make_venv)
    missing = pfl_missing(args.pfl_python)
    if missing:
        raise SystemExit(f"error: pfl cannot run: {missing}")
    load = check_load(args.force or args.quick, str(args.markdown or "the terminal"))
    work = Path(tempfile.mkdtemp(prefix="bench_pfl_"))
    try:
        tables, last = [], {}
        for model in args.models:
            sizes = prepare(args.anchor, work, model, args.rounds)
            result = measure(model, args, work)
            tables.append(render(model, result, sizes, args))
            last = result["best"]["pfl 1"]
    finally:
        shutil.rmtree(work)
    text = "\n".join(tables) + "\n" + versions(last, load)
    print(text)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
