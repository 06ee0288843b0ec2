"""Same scenario + same seed => same files: run a fixed set of scenarios from this checkout and from
another git revision, side by side, and byte-compare every file they write, figures included (wall-clock
fields aside).

For refactors that must not change results (issue 10 was checked this way against f304e12): 21 runs
covering both server modes, every algorithm (with weights.csv), timing-only runs, the data sets that
need no download, several models and partitions, availability kinds, battery and eligibility,
checkpoint cadences and a 2-seed study; and 7 Flower runs of tests/flower's apps (new-style, legacy, SecAgg+,
untimed evaluation, a deadline, a stop rule, server-side evaluation; .npz files compared by their arrays).  Every
run draws its figures; a few minutes per side on 2 cores.

    python benchmarks/tools/same_outputs.py [--base REV] [--only TAG ...] [--keep DIR]

REV defaults to HEAD (compare uncommitted work with the last commit).  Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SYNC, K_ASYNC = "scenarios/sync_deadline.yaml", "scenarios/k_async.yaml"
BATTERY = (
    "population.battery={capacity_j: 8.0, joules_per_sample: 0.05, initial_level: {dist: uniform, low: 0.2, high: 1},"
    " charging: {period_s: 200.0, plugged_fraction: 0.3, charge_w: 0.5}}"
)
WEIGHTS = "algorithm.record_weights=true"
CASES = [  # (tag, scenario file, --set overrides); every run draws its figures, as a user runs it
    ("sync_deadline", SYNC, []),
    ("k_async", K_ASYNC, []),
    ("diurnal", "scenarios/diurnal_fedscale_like.yaml", ["data.clients=300", "stop.rounds=20"]),
    ("population", "benchmarks/scenarios/population.yaml", ["data.clients=3000", "stop.rounds=5"]),
    ("fedar", "scenarios/papers/fedar_digits.yaml", ["stop.rounds=15", WEIGHTS]),
    ("fedau", "scenarios/papers/fedau_digits_markov.yaml", ["stop.rounds=15", WEIGHTS]),
    ("fedau_cyc", "scenarios/papers/fedau_digits_cyclic.yaml", ["stop.rounds=15"]),
    ("fl_fdms", "scenarios/papers/fl_fdms_digits.yaml", ["stop.rounds=15", WEIGHTS]),
    ("fedhist", "scenarios/papers/fedhist_nk10.yaml", ["stop.rounds=15", WEIGHTS]),
    ("fedhist_fair", "scenarios/papers/fedhist_fairness.yaml", ["stop.rounds=15", "eval.per_class=true"]),
    ("mifa", SYNC, ["stop.rounds=10", "algorithm={name: mifa}", WEIGHTS]),
    ("fedvarp", SYNC, ["stop.rounds=10", "algorithm={name: fedvarp}"]),
    ("knownp", SYNC, ["stop.rounds=10", "algorithm={name: fedavg_known_p}"]),
    ("fedasync", K_ASYNC, ["stop.rounds=30", "server.k=1", "algorithm={name: fedasync}"]),
    ("timing", K_ASYNC, ["timing_only=true", "stop.rounds=50"]),
    ("synthetic", SYNC, ["stop.rounds=5", "data.dataset=synthetic", "data.partition={kind: iid}"]),
    ("mnist1d_cnn", SYNC, ["stop.rounds=3", "data.dataset=mnist1d", "model.name=cnn1d",
                           "data.partition={kind: classes, per_client: 2}"]),
    ("lenet", SYNC, ["stop.rounds=3", "model.name=lenet5", "data.partition={kind: clusters, clusters: 3}"]),
    ("ckpt", K_ASYNC, ["stop.rounds=30", "checkpoint.every_rounds=7", "checkpoint.every_virtual_s=50"]),
    ("battery_sync", SYNC, ["stop.rounds=20", "population.availability={kind: markov, p: 0.6, mean_cycle_s: 120}",
                            BATTERY, "server.late_updates=next_round"]),
    ("battery_kasync", K_ASYNC, ["stop.rounds=30", "population.availability={kind: bernoulli, p: 0.7, slot_s: 3.0}",
                                 BATTERY]),
    ("study", "scenarios/compare_deadlines.yaml", ["seeds=[0, 1]"]),
]  # fmt: skip
DIGITS = {
    "seed": 0,
    "data": {"dataset": "digits", "clients": 4},
    "model": {"name": "logreg"},
    "training": {"local_steps": 5, "batch_size": 16, "lr": 0.1},
    "trainer": {"executor": "sequential"},
    "algorithm": {"name": "fedavg", "weighting": "samples"},
}
LEGACY = {"work": {"examples": "num_examples"}, "metrics": {"accuracy": "eval_acc", "loss": "loss"}}
FLAKY = {"availability": {"kind": "bernoulli", "p": 0.7, "slot_s": 3.0}}
SECAGG = {"data": {"clients": 4}, "flower": {"work": {"examples": "num_examples"}}}
CENTRAL = {"data": {"clients": 3}}
FLOWER_CASES = [  # (tag, server app, client app, scenario keys, flower.run_config); apps from tests/flower
    ("flower_sync", "digits_app:server_app", "digits_app:client_app", {**DIGITS, "stop": {"rounds": 3}},
     {"num-server-rounds": 4}),
    ("flower_deadline", "digits_app:server_app", "digits_app:client_app",
     {**DIGITS, "population": FLAKY, "seed": 3}, {"num-server-rounds": 4, "timeout": 2.0, "fraction-evaluate": 0.5}),
    ("flower_untimed", "digits_app:server_app", "digits_app:client_app",
     {**DIGITS, "flower": {"evaluation": "untimed"}}, {"num-server-rounds": 3}),
    ("flower_legacy", "legacy_app:server_app", "legacy_app:client_app",
     {**DIGITS, "stop": {"rounds": 3}, "flower": LEGACY}, {"num-server-rounds": 3}),
    ("flower_secagg", "secagg_app:server_app", "secagg_app:client_app", {**SECAGG, "population": FLAKY},
     {"num-server-rounds": 3, "secagg": 1, "fraction-evaluate": 0.5}),
    ("flower_stop", "central_app:server_app", "toy_app:client_app", {**CENTRAL, "stop": {"rounds": 3}},
     {"num-server-rounds": 6}),
    ("flower_central", "central_app:server_app", "toy_app:client_app",
     {**CENTRAL, "stop": {"target_accuracy": 0.3, "rounds": 8}},
     {"num-server-rounds": 6, "central": True, "fraction-evaluate": 0.0}),
]  # fmt: skip
# one Flower case in a fresh interpreter of the tree at hand (its asyncfl first, the test apps importable)
FLOWER_RUN = """import json, sys
sys.path[1:1] = ["tests/flower"]
import asyncfl.flower
tag, server, client, keys, config, out = json.loads(sys.argv[1])
flower = {**keys.get("flower", {}), "run_config": {**config, "final-path": out + ".app_final.npz"}}
scenario = {**keys, "flower": flower}
asyncfl.flower.run(server, client, scenario, out)
"""
WALL_CLOCK = {"wall_seconds", "real_seconds", "figures_seconds", "elapsed_s"}  # differ run to run
WALL_CLOCK_JSON = re.compile(rb'"(' + "|".join(sorted(WALL_CLOCK)).encode() + rb')": *[^,}\n]+')
SKIPPED = (".log", ".pt")  # command logs, checkpoints (pickled tensors); figures are compared byte for byte


def run_cases(tree: Path, out: Path, only: set[str]) -> list[str]:
    """Every case from ``tree``'s code into ``out/<tag>``; the tags that failed."""
    failed = []
    out.mkdir(parents=True, exist_ok=True)  # a case that fails before writing its run still leaves its .log
    for tag, scenario, overrides in CASES:
        if only and tag not in only:
            continue
        sets = [arg for value in overrides for arg in ("--set", value)]
        command = [sys.executable, "-m", "asyncfl", "run", scenario, *sets, "--quiet", "--out", str(out / tag)]
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True)  # python -m: tree's asyncfl first
        (out / f"{tag}.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            failed.append(tag)
    for tag, server, client, keys, config in FLOWER_CASES:
        if only and tag not in only:
            continue
        argument = json.dumps([tag, server, client, keys, config, str(out / tag)])
        done = subprocess.run([sys.executable, "-c", FLOWER_RUN, argument], cwd=tree, capture_output=True, text=True)
        (out / f"{tag}.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            failed.append(tag)
    return failed


def npz_arrays(path: Path) -> bytes:
    """An .npz's arrays (names, dtypes, shapes, values): its zip entries carry the time they were written."""
    with np.load(path) as arrays:
        return b"".join(f"{k}{arrays[k].dtype}{arrays[k].shape}".encode() + arrays[k].tobytes() for k in arrays)


def normalised(path: Path, root: Path) -> bytes:
    """The file's bytes without what may differ between two runs of the same code: wall-clock fields
    (CSV columns, JSON values) and the output root's own path.  Everything else is compared as written,
    line endings, quoting and JSON layout included."""
    if path.suffix == ".npz":
        return npz_arrays(path)
    data = path.read_bytes().replace(str(root).encode(), b"ROOT")
    if path.suffix == ".json":  # the value of a wall-clock key, at any depth, masked in place
        return WALL_CLOCK_JSON.sub(rb'"\1": ?', data)
    if path.suffix == ".csv":
        header = data.split(b"\n", 1)[0].decode().rstrip("\r").split(",")
        clock = [i for i, name in enumerate(header) if name in WALL_CLOCK]
        if clock:  # mask those columns' values; the rest of each line stays byte for byte
            lines = data.split(b"\n")
            rows = csv.reader(io.StringIO(data.decode(), newline=""))
            masked = [
                ",".join("?" if i in clock else cell for i, cell in enumerate(row)).encode()
                + (b"\r" * line.endswith(b"\r"))
                for row, line in zip(rows, lines)
            ]
            return b"\n".join(masked) + b"\n" * data.endswith(b"\n")
    return data


def differences(a: Path, b: Path) -> tuple[int, list[str]]:
    """(files identical, what differs) between two output roots."""
    files = [
        {p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.suffix not in SKIPPED} for root in (a, b)
    ]
    problems = [
        f"only in {'base' if rel in files[0] else 'this checkout'}: {rel}" for rel in sorted(files[0] ^ files[1])
    ]
    same = 0
    for rel in sorted(files[0] & files[1]):
        before, after = normalised(a / rel, a), normalised(b / rel, b)
        if before == after:
            same += 1
        elif before.replace(b"\r\n", b"\n") == after.replace(b"\r\n", b"\n"):
            problems.append(f"different line endings only: {rel}")  # still a difference: say why in the change
        else:
            problems.append(f"different: {rel}")
    return same, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="git revision to compare with (default HEAD)")
    parser.add_argument("--only", nargs="*", default=[], help="run only these cases")
    parser.add_argument("--keep", type=Path, help="write both sides' runs here and keep them")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp()) if args.keep is None else args.keep
    base_tree = work / "base_tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), args.base], cwd=ROOT, check=True,
                   capture_output=True)  # fmt: skip
    try:
        only = set(args.only)
        failed = {side: run_cases(tree, work / side, only) for side, tree in (("base", base_tree), ("now", ROOT))}
        same, problems = differences(work / "base", work / "now")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT, capture_output=True)
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    for side, tags in failed.items():
        problems += [f"{side}: case {tag} failed (see its .log with --keep)" for tag in tags]
    print(f"{same} files identical, {len(problems)} differences (base {args.base} vs this checkout)")
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
