"""Regenerate the time-of-day figures: ``python benchmarks/experiments/make_time_of_day.py`` (about a minute).

Runs ``scenarios/diurnal_fedscale_like.yaml`` (one virtual day, 3,000 clients in three time zones,
timing only) exactly like ``python -m asyncfl scenarios/diurnal_fedscale_like.yaml --out RUN_DIR``
and copies three of its figures into ``docs/figures/``; ``docs/figures/diurnal_peaks.md`` (included in that page)
gives each zone's hour of most delivered updates, measured from the run's files.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "diurnal_fedscale_like.yaml"
COPIES = {
    "timezones.png": "diurnal_timezones.png",
    "updates_vs_time.png": "diurnal_updates_vs_time.png",
    "time_breakdown.png": "diurnal_time_breakdown.png",
}


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from asyncfl.cli import main as asyncfl

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "diurnal_fedscale_like"
        code = asyncfl([str(SCENARIO), "--out", str(run), "--quiet"])
        if code != 0:
            return code
        for source, target in COPIES.items():
            shutil.copyfile(run / source, ROOT / "docs" / "figures" / target)
            print(ROOT / "docs" / "figures" / target)
        peaks = ROOT / "docs" / "figures" / "diurnal_peaks.md"
        peaks.write_text(peak_hours_markdown(run), encoding="utf-8")
        print(peaks)
    return 0


def peak_hours_markdown(run: Path) -> str:
    """Per time zone, the UTC hour of the day with the most delivered updates (from updates.csv,
    rounds.csv and clients.csv, as timezones.png counts them), in UTC and local time, beside the hour
    at which the zone's availability peaks and the rounds the server closed in each of those hours."""
    import yaml

    config = yaml.safe_load((run / "config.yaml").read_text())
    peak_local = config["population"]["availability"]["peak_hour"]
    rounds, updates = pd.read_csv(run / "rounds.csv"), pd.read_csv(run / "updates.csv")
    zones = pd.read_csv(run / "clients.csv").set_index("client")["utc_offset_h"]
    hour = (updates["round"].map(rounds.set_index("round")["time"]) // 3600).astype(int) % 24
    delivered = pd.crosstab(hour.to_numpy(), zones.reindex(updates["client"]).to_numpy())
    rounds_per_hour = (rounds["time"] // 3600).astype(int).value_counts()
    lines = [
        "| zone | clients | availability peaks at (UTC) | most updates delivered in the hour from (UTC) | "
        "local time then | rounds closed in that hour | rounds in the availability peak's hour |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for zone in sorted(delivered.columns):
        offset = int(zone)
        best = int(delivered[zone].idxmax())
        avail_utc = int(peak_local - offset) % 24
        lines.append(
            f"| UTC{offset:+d} | {int((zones == zone).sum()):,} | {avail_utc:02d}:00 | {best:02d}:00 | "
            f"{(best + offset) % 24:02d}:00 | {rounds_per_hour.get(best, 0)} | {rounds_per_hour.get(avail_utc, 0)} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
