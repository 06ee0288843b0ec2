"""Regenerate the README's study figures: ``python plots/make_figures.py`` (about 3-5 minutes on 2 cores).

Covers: the study machinery end to end.  Runs ``scenarios/compare_deadlines.yaml`` (FedAvg without
and with an 8 s deadline, and FedBuff, 3 seeds each, 200 virtual seconds) exactly like

    python -m asyncfl scenarios/compare_deadlines.yaml --out SWEEP_DIR

then copies the comparison figures and tables and a few straggler figures of single runs into
``plots/``.  Pass ``--executor ray`` to run the nine simulations as Ray tasks; ``--sweep DIR`` keeps
the sweep directory (default: a temporary directory).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "compare_deadlines.yaml"
PLOTS = ROOT / "plots"
COPIES = {  # sweep-relative source -> file in plots/
    "accuracy_vs_time.png": "compare_accuracy_vs_time.png",
    "accuracy_vs_round.png": "compare_accuracy_vs_round.png",
    "time_to_target.md": "compare_time_to_target.md",
    "client_accuracy.md": "compare_client_accuracy.md",
    "fedavg_deadline/seed0/timeline.png": "straggler_timeline_deadline.png",
    "fedbuff/seed0/timeline.png": "straggler_timeline_fedbuff.png",
    "fedbuff/seed0/staleness.png": "straggler_staleness_fedbuff.png",
    "fedavg_deadline/seed0/participation.png": "straggler_participation_deadline.png",
    "fedavg_deadline/seed0/client_accuracy.png": "straggler_client_accuracy_deadline.png",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--sweep", type=Path, help="keep the sweep here (must be new or empty)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from asyncfl.__main__ import main as asyncfl

    with tempfile.TemporaryDirectory() as tmp:
        sweep = args.sweep or Path(tmp) / "sweep"
        code = asyncfl([str(SCENARIO), "--out", str(sweep), "--executor", args.executor])
        if code != 0:
            return code
        for source, target in COPIES.items():
            shutil.copyfile(sweep / source, PLOTS / target)
            print(PLOTS / target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
