"""The noise floors of a study's claims: is each effect larger than what the seeds, and the CPU's own kernels,
move a result by?

- the seed noise floor of a claim: the sample standard deviation (ddof=1) of its per-seed paired differences
  variant − versus (the pairs the claim is tested on, :func:`asyncfl.study.claim_tests.claim_pairs`), in the
  claim's unit: how far one seed's difference strays from another's;
- the kernel noise floor of a claim's measure: the largest difference between two runs of the same variant
  x seed under two CPU kernel sets (``noise_floor:``, :mod:`asyncfl.study.noise_floor`), over every variant x
  seed rerun; "not measured" without ``noise_floor:`` or with fewer than two kernel sets run.  A time to a
  target counts only where the run reached it under every kernel set;
- the claim's effect (its mean paired difference) exceeds a floor when its size is larger than it; the words
  say which floor it does not exceed.

Writes noise_floor.csv; report.md gets the table (:func:`noise_section`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from asyncfl.output.tables import markdown, write_csv
from asyncfl.study.claim_tests import claim_pairs
from asyncfl.study.claims import Claim
from asyncfl.study.noise_floor import NOISE_DIR
from asyncfl.study.seed_statistics import run_measures

NOT_MEASURED = "kernel floor not measured"


def kernel_spreads(sweep_dir: Path, targets: Sequence[float] = (), columns: Sequence[str] = ()) -> dict[str, float]:
    """measure -> the largest (max − min) over kernel sets of one variant x seed, over every variant x seed
    under ``<sweep_dir>/noise_floor/<capability>/<variant>/seed<N>/`` that ended under at least two kernel
    sets (raw units: accuracy as a fraction, times in virtual s)."""
    found: dict[tuple[str, str], list[dict[str, float]]] = {}
    root = sweep_dir / NOISE_DIR
    for run in sorted(root.glob("*/*/seed*")) if root.is_dir() else ():
        found.setdefault((run.parent.name, run.name), []).append(run_measures(run, targets, columns))
    out: dict[str, float] = {}
    for measured in found.values():
        for measure in measured[0]:
            values = [m[measure] for m in measured if math.isfinite(m[measure])]
            if len(values) >= 2 and len(values) == len(measured):
                out[measure] = max(out.get(measure, 0.0), max(values) - min(values))
    return out


def floor_words(effect: float, seed_floor: float, kernel_floor: float) -> str:
    """Whether ``|effect|`` exceeds the seed and the kernel noise floors (NaN: unknown / not measured)."""
    size = abs(effect)
    if not math.isfinite(effect) or not math.isfinite(seed_floor):
        return "seed floor unknown (fewer than two pairs)"
    if size <= seed_floor:
        return "within the seed noise floor"
    if not math.isfinite(kernel_floor):
        return f"exceeds the seed noise floor; {NOT_MEASURED}"
    if size <= kernel_floor:
        return "within the CPU kernel noise floor"
    return "exceeds both floors"


def floor_rows(
    claims: Sequence[Claim],
    table: Mapping[str, Mapping[str, Mapping[int, float]]],
    horizons: Mapping[str, Mapping[int, float]],
    spreads: Mapping[str, float],
) -> list[dict]:
    """noise_floor.csv: per claim (and axis value) its effect, both floors in the claim's unit and the words."""
    rows = []
    for claim in claims:
        diffs = np.array([p.difference for p in claim_pairs(claim, table, horizons)], dtype=np.float64)
        effect = float(diffs.mean()) if len(diffs) else math.nan
        seed_floor = float(diffs.std(ddof=1)) if len(diffs) > 1 else math.nan
        scale = 1.0 if claim.unit == "virtual s" else 100.0
        kernel = scale * spreads.get(claim.column, math.nan)
        rows.append({
            "family": claim.family, "variant": claim.variant, "versus": claim.versus, "measure": claim.measure,
            "unit": claim.unit, "pairs": len(diffs), "effect": effect, "seed_floor": seed_floor,
            "kernel_floor": kernel, "floors": floor_words(effect, seed_floor, kernel),
        })  # fmt: skip
    return rows


NOISE_INTRO = (
    "## Noise floors\n\nPer claim: its effect (mean paired difference variant − versus), the seed noise floor (the"
    " standard deviation of its per-seed paired differences) and the CPU kernel noise floor (the largest difference"
    " of one variant x seed rerun under two of torch's CPU kernel sets, `noise_floor:`; over every rerun), in the"
    " claim's unit (points or virtual s), and whether the effect's size exceeds both. Numbers: `noise_floor.csv`."
)


def _cell(x: float) -> str:
    return f"{x:.2f}" if math.isfinite(x) else "—"


def noise_section(out_dir: Path, rows: Sequence[Mapping]) -> str:
    """Write noise_floor.csv into ``out_dir`` and return report.md's section on it ("" without claims)."""
    if not rows:
        return ""
    write_csv(out_dir / "noise_floor.csv", rows)
    cells = [{
        "claim": f"{r['variant']} vs {r['versus']}", "measure": r["measure"], "pairs": str(r["pairs"]),
        "effect": _cell(r["effect"]), "seed floor": _cell(r["seed_floor"]),
        "kernel floor": _cell(r["kernel_floor"]), "floors": r["floors"],
    } for r in rows]  # fmt: skip
    return NOISE_INTRO + "\n\n" + markdown(cells)
