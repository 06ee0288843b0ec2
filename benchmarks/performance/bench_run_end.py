"""The end of a run and its evaluations, timed stage by stage, this tree against a base revision.

Covers: ``scenarios/k_async.yaml`` with the fused trainer (or any scenario), run in process by
``run_scenario`` in a fresh child process per tree and repeat, the two trees interleaved (base, this,
base, this, ...) so that the shared machine's load falls on both alike; the best of ``--repeats`` per
stage is kept.  Each child times:

* every end-of-run callback's ``on_end`` (clients.csv, summary.json, offline_periods.csv, the
  figures, ...), by class name; the figures' share split into importing matplotlib and the figure
  modules (``import``) and drawing and saving them (``draw+save``: summary.json ``figures_seconds``);
* the test-set evaluations (``Learner.test_metrics``, every ``eval.every_rounds``) and the final
  per-client evaluation (``Learner.client_accuracies``);
* the whole ``run_scenario`` and the trainers' ``run`` calls (training), for scale.

    python benchmarks/performance/bench_run_end.py [--base c65e818] [--repeats 3] [scenarios/k_async.yaml]

Prints one line per stage: base seconds, this tree's seconds and their ratio.  Nothing is written
under docs/ (timings of this shared machine are noisy: read the ratios).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _first_module(*names: str):
    """The first of ``names`` that imports: the module a class lives in moves between revisions."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"none of {names}")


def _timed(cls, method: str, key: str, seconds: dict[str, float]) -> None:
    """Wrap ``cls.method`` so that its seconds add up in ``seconds[key]``."""
    original = getattr(cls, method)

    def wrapper(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - start

    setattr(cls, method, wrapper)


def _subclasses(cls) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def child(scenario: str, executor: str) -> None:
    """One run in this process; prints a JSON object of seconds per stage."""
    from asyncfl.config import load_scenario

    runner = _first_module("asyncfl.runner.start", "asyncfl.runner")
    learner = _first_module("asyncfl.runner.learning", "asyncfl.learner")
    callbacks = _first_module("asyncfl.runner.callbacks.end_of_run", "asyncfl.callbacks.end_of_run")
    base = _first_module("asyncfl.runner.callbacks.base", "asyncfl.callbacks.base")
    from asyncfl.learn.batched import BatchedTrainer
    from asyncfl.learn.trainer import SequentialTrainer

    assert callbacks is not None  # imported for its Callback subclasses
    seconds: dict[str, float] = {}
    for cls in _subclasses(base.Callback):
        if "on_end" in vars(cls):
            _timed(cls, "on_end", f"on_end {cls.__name__}", seconds)
    _timed(learner.Learner, "test_metrics", "evaluate: test set", seconds)
    _timed(learner.Learner, "client_accuracies", "evaluate: clients' test splits", seconds)
    for cls in (SequentialTrainer, BatchedTrainer):
        _timed(cls, "run", "training", seconds)
    out = Path(tempfile.mkdtemp()) / "run"
    start = time.perf_counter()
    runner.run_scenario(load_scenario(Path(scenario), [f"trainer.executor={executor}"]), out)
    seconds["run_scenario"] = time.perf_counter() - start
    figures = json.loads((out / "summary.json").read_text(encoding="utf-8")).get("figures_seconds")
    if figures is not None and "on_end RunFigures" in seconds:
        seconds["figures: draw+save"] = figures
        seconds["figures: import"] = seconds["on_end RunFigures"] - figures
    seconds["end of run"] = sum(v for k, v in seconds.items() if k.startswith("on_end "))
    seconds["outside training"] = seconds["run_scenario"] - seconds.get("training", 0.0)
    shutil.rmtree(out.parent)
    print(json.dumps(seconds))


def run_child(tree: Path, scenario: str, executor: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # the tree's asyncfl, not the installed one
    command = [sys.executable, str(Path(__file__).resolve()), "--child", scenario, "--executor", executor]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="scenarios/k_async.yaml")
    parser.add_argument("--base", default="c65e818", help="revision to compare with (default c65e818)")
    parser.add_argument("--executor", default="fused", help="trainer.executor (default fused)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.scenario, args.executor)
        return
    with tempfile.TemporaryDirectory(prefix="bench-run-end-") as scratch:
        base_tree = Path(scratch) / "base"
        base_tree.mkdir()
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base_tree)], input=archive.stdout, check=True)
        best: dict[str, dict[str, float]] = {"base": {}, "this": {}}
        for repeat in range(args.repeats):
            for tag, tree in (("base", base_tree), ("this", ROOT)):
                seconds = run_child(tree, args.scenario, args.executor)
                for key, value in seconds.items():
                    best[tag][key] = min(value, best[tag].get(key, value))
                print(f"  repeat {repeat + 1} {tag}: end of run {seconds['end of run']:.2f} s, "
                      f"run_scenario {seconds['run_scenario']:.2f} s", flush=True)  # fmt: skip
    print(f"{args.scenario} ({args.executor}), best of {args.repeats} interleaved runs, base {args.base}:")
    print(f"{'stage':44} {'base s':>8} {'this s':>8} {'this/base':>10}")
    keys = sorted(set(best["base"]) | set(best["this"]), key=lambda k: (k.startswith("on_end"), k))
    for key in keys:
        b, t = best["base"].get(key, float("nan")), best["this"].get(key, float("nan"))
        print(f"{key:44} {b:8.3f} {t:8.3f} {t / b if b else float('nan'):10.2f}")


if __name__ == "__main__":
    main()
