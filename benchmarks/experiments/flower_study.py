"""The Flower study of docs/how-to/flower.md: ``python benchmarks/experiments/flower_study.py`` (20 minutes on 2 cores
shared with other work, load average about 30).

Covers: the example Flower app on the virtual clock end to end.  Runs ``examples/flower_digits/scenarios/study.yaml``
(Flower's FedAvg from the app's ServerApp without and with a deadline, asyncfl's FedBuff on the same ClientApp,
accuracy measured untimed for all three, and FedAvg with Flower's timed evaluation; every variant's lr tuned on
seeds 100-101; 10 evaluation seeds, 200 virtual seconds) exactly as

    cd examples/flower_digits && python -m asyncfl scenarios/study.yaml --out SWEEP_DIR

then copies the sweep's accuracy-against-virtual-time figure, its time-to-target table and its claims into
``docs/figures/flower_*``, the per-seed pairs behind the claims into ``docs/results/flower_claims_seeds.*``, and
writes ``docs/figures/flower_summary.md``: the setting and the sentences the page
quotes, every number read from the sweep (``python benchmarks/tools/docs_sync.py`` copies the Markdown files
into the page).  ``--sweep DIR`` keeps the sweep directory (default: a temporary one); ``--analyse DIR`` runs
nothing and rewrites the files from a finished sweep.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP_DIR = ROOT / "examples" / "flower_digits"
STUDY = APP_DIR / "scenarios" / "study.yaml"
DOCS = ROOT / "docs"
SUMMARY = DOCS / "figures" / "flower_summary.md"
COPIES = {  # sweep-relative source -> file under docs/
    "accuracy_vs_time.png": "figures/flower_accuracy_vs_time.png",
    "time_to_target.md": "figures/flower_time_to_target.md",
    "claims.md": "figures/flower_claims.md",
    "claims_seeds.md": "results/flower_claims_seeds.md",  # every pair behind the claims, linked from flower.md
    "claims_seeds.csv": "results/flower_claims_seeds.csv",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", type=Path, help="keep the sweep here (must be new or empty)")
    parser.add_argument("--analyse", type=Path, help="a finished sweep: write the docs files from it, run nothing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sweep = (args.analyse or args.sweep or Path(tmp) / "sweep").resolve()  # the study runs from the app's folder
        if args.analyse is None:
            code = run_study(sweep)
            if code != 0:
                return code
        for source, target in COPIES.items():
            shutil.copyfile(sweep / source, DOCS / target)
            print(DOCS / target)
        SUMMARY.write_text(summary_text(sweep), encoding="utf-8")
        print(SUMMARY)
    return 0


def run_study(sweep: Path) -> int:
    """The study as its command runs it: from the app's folder, so that ``flower_digits`` imports."""
    sys.path[:0] = [str(APP_DIR), str(ROOT)]
    from asyncfl.cli import main as asyncfl

    here = Path.cwd()
    os.chdir(APP_DIR)
    try:
        return asyncfl([str(STUDY), "--out", str(sweep)])
    finally:
        os.chdir(here)


def summary_text(sweep: Path) -> str:
    """The setting of the study and what its time-to-target table shows, every number read from ``sweep``."""
    import yaml

    study = yaml.safe_load((sweep / "study.yaml").read_text(encoding="utf-8"))
    population = study["population"]
    tiers = population["compute"]["samples_per_s"]["tiers"]
    tier_text = ", ".join(f"{t['share'] * 100:.0f} % at {t['value']:g}" for t in tiers)
    p = population["availability"]["p"]
    deadline_s = next(v["set"]["flower.run_config.timeout"] for v in study["compare"] if v["name"].endswith("deadline"))
    setting = (
        f"Setting: the example app (examples/flower_digits), {study['data']['clients']} Flower nodes in speed tiers "
        f"({tier_text} samples/s), {population['availability']['kind']} availability "
        f"({p['low'] * 100:.0f}–{p['high'] * 100:.0f} % online), {study['stop']['virtual_time_s']:g} virtual "
        f"seconds, {len(study['seeds'])} seeds; the deadline is Flower's `timeout` of {deadline_s:g} s."
    )
    from asyncfl import read_study

    target = float(study["targets"][0])
    table = read_study(sweep).time_to_target
    rows = table[table["target"] == target].set_index("variant")
    t, final = rows["time_to_target_mean_s"], rows["final_accuracy_mean"]  # NaN: never reached

    def reached(name: str) -> str:
        return f"{int(rows.at[name, 'reached'])}/{int(rows.at[name, 'seeds'])} seeds"

    def time_text(name: str) -> str:
        return "never" if math.isnan(t[name]) else f"{t[name]:.0f} s"

    names = {
        "fedavg": "Flower FedAvg",
        "fedavg_deadline": "with the deadline",
        "fedbuff": "asyncfl's FedBuff on the same ClientApp",
        "fedavg_timed_evaluation": "and Flower FedAvg paying for its evaluate round trips",
    }
    lrs = tuned_lrs(sweep)
    times = ", ".join(f"{label} {time_text(name)} ({reached(name)}, lr {lrs[name]:g})" for name, label in names.items())
    finals = ", ".join(f"{final[name] * 100:.1f} %" for name in names)
    sentences = [
        setting,
        f"Time to {target * 100:g} % accuracy (restricted mean over every seed, a miss at its run's horizon; lr as"
        f" tuned on seeds {', '.join(str(seed) for seed in study['tune']['seeds'])}): {times}; final accuracy, in"
        f" that order, {finals}.",
    ]
    return "\n\n".join(sentences) + "\n"


def tuned_lrs(sweep: Path) -> dict[str, float]:
    """Each variant's lr: tuned.yaml's choice, else the study's run config."""
    import yaml

    study = yaml.safe_load((sweep / "study.yaml").read_text(encoding="utf-8"))
    lr = float(study["flower"]["run_config"]["lr"])
    tuned = yaml.safe_load((sweep / "tuned.yaml").read_text(encoding="utf-8"))
    chosen = tuned["chosen"]
    return {v["name"]: float((chosen.get(v["name"]) or {}).get("flower.run_config.lr", lr)) for v in study["compare"]}


if __name__ == "__main__":
    sys.exit(main())
