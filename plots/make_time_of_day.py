"""Regenerate the README's time-of-day figures: ``python plots/make_time_of_day.py`` (about a minute).

Runs ``scenarios/diurnal_fedscale_like.yaml`` (one virtual day, 3,000 clients in three time zones,
timing only) exactly like ``python -m asyncfl scenarios/diurnal_fedscale_like.yaml --out RUN_DIR``
and copies three of its figures into ``plots/``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "diurnal_fedscale_like.yaml"
COPIES = {
    "timezones.png": "diurnal_timezones.png",
    "updates_vs_time.png": "diurnal_updates_vs_time.png",
    "time_breakdown.png": "diurnal_time_breakdown.png",
}


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from asyncfl.__main__ import main as asyncfl

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "diurnal_fedscale_like"
        code = asyncfl([str(SCENARIO), "--out", str(run), "--quiet"])
        if code != 0:
            return code
        for source, target in COPIES.items():
            shutil.copyfile(run / source, ROOT / "plots" / target)
            print(ROOT / "plots" / target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
