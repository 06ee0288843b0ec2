"""Covers: the accuracy bounds of the tests, and docs/explanation/reproducibility.md (what differs between machines).

Training is chaotic: a last-bit difference in one kernel's result (another CPU's vector width, another
BLAS code path, another thread count) grows into a different trajectory, so another machine's accuracy
for the same scenario and seed is a draw like another seed's.  Each test that bounds an accuracy gets its
margin from this script: every case runs over seeds 0..N-1 (the seed changes model init, data split and
minibatch order), and with --kernels the test's own seed also runs under every kernel path this machine
offers (torch's vectorised kernels without AVX-512 or without any vector unit, MKL's conditional numerical
reproducibility mode, two threads), as another machine would.

    python benchmarks/experiments/accuracy_spread.py            # seeds 0-9 of every case (about 5 minutes, 2 cores)
    python benchmarks/experiments/accuracy_spread.py --kernels  # also each case's test seed under each kernel path
    python benchmarks/experiments/accuracy_spread.py --cases central_mlp --seeds 20

Prints, per case, mean, std, min and max over seeds (and the kernel paths' min..max) and the bound rule
the tests use, mean - 4 std (and mean + 4 std for a two-sided range), and writes every measured value to
``docs/results/accuracy_spread.csv`` (replacing the rows of the cases measured).  The data sets are
generated alike everywhere (MNIST-1D's float32 arrays are bit-identical under numpy 1.26 / scipy 1.11 and
numpy 2.4 / scipy 1.17, and equal the published data set).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402

RESULT = ROOT / "docs" / "results" / "accuracy_spread.csv"

# another machine, as far as this one can play it: (name, environment, trainer.threads)
KERNELS = [
    ("this machine", {}, None),
    ("ATen AVX2 kernels", {"ATEN_CPU_CAPABILITY": "avx2"}, None),
    ("ATen scalar kernels", {"ATEN_CPU_CAPABILITY": "default"}, None),
    ("MKL_CBWR=COMPATIBLE", {"MKL_CBWR": "COMPATIBLE"}, None),
    ("2 threads", {}, 2),
]

# runs in a copy of the package that tests/testing/test_extending_data.py extends with toy, linear2 and alternate
EXTENDED_DRIVER = """
import json, sys
from pathlib import Path
from asyncfl.cli import main
from asyncfl.output.reading import read_summary
out = {}
for seed in json.loads(sys.argv[1]):
    for name in ("toy", "linear2"):
        run = f"runs/{name}{seed}"
        sets = ["--set", f"seed={seed}"] + (["--set", f"trainer.threads={sys.argv[2]}"] if sys.argv[2] else [])
        assert main(["run", f"{name}.yaml", "--quiet", "--out", run, *sets]) == 0
        out.setdefault(name, []).append(read_summary(Path(run))["final_accuracy"])
print(json.dumps(out))
"""


def _summary_accuracy(sections: dict, seed: int, threads: int | None) -> float:
    from asyncfl.config import validate_scenario
    from asyncfl.runner.start import run_scenario

    sections = {**sections, "seed": seed, "trainer": {**sections.get("trainer", {}), "threads": threads}}
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = run_scenario(validate_scenario(sections, source="accuracy_spread"), Path(tmp) / "run", quiet=True)
        return read_summary(run_dir)["final_accuracy"]


def central(model: str):
    from tests.learn.test_mnist1d import central_scenario

    return lambda seeds, threads: [_summary_accuracy(central_scenario(model), s, threads) for s in seeds]


def learned(mode: str):
    """Final minus first test accuracy of tests/learn/test_batched.py's run (sequential executor)."""
    from asyncfl.config import validate_scenario
    from asyncfl.output.reading import read_csv
    from asyncfl.runner.start import run_scenario
    from tests.learn.test_batched import same_metrics_scenario

    def measure(seeds, threads):
        gains = []
        for seed in seeds:
            raw = {
                **same_metrics_scenario(mode),
                "seed": seed,
                "trainer": {"executor": "sequential", "threads": threads},
            }
            with tempfile.TemporaryDirectory() as tmp:
                rows = read_csv(run_scenario(validate_scenario(raw), Path(tmp) / "run", quiet=True) / "metrics.csv")
            gains.append(float(rows[-1]["test_accuracy"]) - float(rows[0]["test_accuracy"]))
        return gains

    return measure


def synthetic_least_squares(seeds, threads):
    """tests/learn/test_datasets.py: a per-client least-squares fit of synthetic(alpha=beta=0) data (numpy only)."""
    import numpy as np

    from asyncfl.learn.datasets import load_arrays
    from tests.learn.test_datasets import synthetic

    out = []
    for seed in seeds:
        raw = load_arrays(synthetic(alpha=0.0, beta=0.0, samples_per_client=400), seed=seed)
        mask = raw.client_of_train == 0
        x, y = raw.x_train[mask], raw.y_train[mask]
        xb = np.hstack([x, np.ones((len(x), 1))])
        coef, *_ = np.linalg.lstsq(xb, np.eye(3)[y], rcond=None)
        out.append(float((np.argmax(xb @ coef, axis=1) == y).mean()))
    return out


def extended(seeds, threads) -> dict[str, list[float]]:
    """tests/testing/test_extending_data.py's toy and linear2 runs, in the extended copy of the package."""
    from tests.testing.test_extending_data import build_extended_copy

    with tempfile.TemporaryDirectory() as tmp:
        build_extended_copy(Path(tmp))
        env = {**os.environ, "PYTHONPATH": tmp}
        args = [sys.executable, "-c", textwrap.dedent(EXTENDED_DRIVER), json.dumps(seeds), str(threads or "")]
        done = subprocess.run(args, cwd=tmp, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# case -> (the seed its test runs, the bound the test asserts, measure(seeds, threads) -> values)
CASES = {
    "central_logreg": (0, "tests/learn/test_mnist1d.py CENTRAL range", central("logreg")),
    "central_mlp": (0, "tests/learn/test_mnist1d.py CENTRAL range", central("mlp")),
    "central_cnn1d": (0, "tests/learn/test_mnist1d.py CENTRAL range", central("cnn1d")),
    "extending_toy": (3, "tests/testing/test_extending_data.py: > 0.8", None),
    "extending_linear2": (3, "tests/testing/test_extending_data.py: > 0.6", None),
    "learned_sync": (0, "tests/learn/test_batched.py: final - first > 0", learned("sync")),
    "learned_k_async": (0, "tests/learn/test_batched.py: final - first > 0", learned("k_async")),
    "synthetic_least_squares": (2, "tests/learn/test_datasets.py: > 0.6", synthetic_least_squares),
}


def measure(cases: list[str], seeds: list[int], threads: int | None) -> dict[str, list[float]]:
    out = {}
    wanted_extended = [c for c in cases if c.startswith("extending_")]
    if wanted_extended:
        found = extended(seeds, threads)
        out.update({c: found[c.removeprefix("extending_")] for c in wanted_extended})
    for case in cases:
        if case not in out:
            out[case] = CASES[case][2](seeds, threads)
            print(f"  {case}: {', '.join(f'{v:.3f}' for v in out[case])}", file=sys.stderr, flush=True)
    return out


def under_kernel(cases: list[str], env: dict, threads: int | None) -> dict[str, float]:
    """Each case's test seed, in a fresh process with ``env`` (the kernel choice is made at import)."""
    out = {}
    for case in cases:
        args = [sys.executable, __file__, "--worker", "--cases", case, "--seed-list", str(CASES[case][0])]
        args += ["--threads", str(threads)] if threads else []
        done = subprocess.run(args, env={**os.environ, **env}, capture_output=True, text=True, check=True)
        out[case] = json.loads(done.stdout.strip().splitlines()[-1])[case][0]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--kernels", action="store_true", help="also each case's test seed under each kernel path")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed-list", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)
    add_force_argument(parser)
    args = parser.parse_args(argv)
    if args.worker:
        seeds = [int(s) for s in args.seed_list.split(",")]
        print(json.dumps(measure(args.cases, seeds, args.threads)))
        return 0
    load = check_load(args.force, str(RESULT.relative_to(ROOT)))
    seeds = list(range(args.seeds))
    by_seed = measure(args.cases, seeds, None)
    rows = [
        {"case": c, "variant": "seed", "seed": s, "value": v} for c in args.cases for s, v in zip(seeds, by_seed[c])
    ]
    if args.kernels:
        for name, env, threads in KERNELS[1:]:
            for case, value in under_kernel(args.cases, env, threads).items():
                rows.append({"case": case, "variant": name, "seed": CASES[case][0], "value": value})
    print(f"{'case':24} {'tested seed':>11} {'mean':>6} {'std':>6} {'min':>6} {'max':>6}  mean-4std..mean+4std"
          f"  {'kernel paths (test seed)':24}  test's bound")  # fmt: skip
    for case in args.cases:
        values = by_seed[case]
        mean, std = statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0
        kernel = [r["value"] for r in rows if r["case"] == case and r["variant"] != "seed"]
        tested = dict(zip(seeds, values)).get(CASES[case][0])
        kernel_text = f"{min(kernel + [tested]):.3f}..{max(kernel + [tested]):.3f}" if kernel and tested else "-"
        print(f"{case:24} {tested if tested is not None else float('nan'):11.3f} {mean:6.3f} {std:6.3f} "
              f"{min(values):6.3f} {max(values):6.3f}  {mean - 4 * std:6.3f}..{mean + 4 * std:6.3f}"
              f"          {kernel_text:24}  {CASES[case][1]}")  # fmt: skip
    rows = [{**row, **load.fields()} for row in rows]  # the machine each row was measured on
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    if RESULT.is_file():  # keep the rows of the cases not measured this time
        with open(RESULT, newline="") as handle:
            rows = [r for r in csv.DictReader(handle) if r["case"] not in args.cases] + rows
    with open(RESULT, "w", newline="") as handle:
        writer = csv.DictWriter(handle, ["case", "variant", "seed", "value", *load.fields()])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {RESULT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
