"""Regenerate ``plots/``: accuracy against virtual seconds for every shipped scenario and study.

    python benchmarks/experiments/make_plots.py                 # every scenarios/*.yaml
    python benchmarks/experiments/make_plots.py --only k_async sync_deadline   # some of them
    python benchmarks/experiments/make_plots.py --only shakespeare_stragglers --from-sweep shakespeare_stragglers DIR

``--from-sweep NAME DIR`` takes a long study that was run once already (e.g. resumably, with ``--executor ray``)
from its finished sweep directory instead of running it again: its config must be the scenario file's, and its
figure is redrawn by this code (``python -m asyncfl plot`` on a copy), so the picture is the current code's.

The straggler_mitigation study is most of the work: 346 runs with its tuning, 10.8 min on both cores of a
quiet 2-core machine with ``straggler_mitigation.py --executor ray`` (issue 32); here they run one after the
other, so draw it from that sweep with ``--from-sweep`` instead.  Every other scenario together took about
5 minutes before issue 32 added that tuning (52 min for all of them at load 6-9).

Covers: the shipped scenarios as a user runs them.  Each ``scenarios/<name>.yaml`` runs exactly like

    python -m asyncfl scenarios/<name>.yaml --out DIR --quiet

(a study runs every variant x seed; the local executor, figures on), and the ``accuracy_vs_time.png``
that the run or the sweep draws is copied to ``plots/<name>.png``, re-encoded with a 256-colour
palette (a third of the size, the same picture).  A timing-only scenario trains nothing and has no
accuracy: it is listed in ``plots/README.md`` and skipped.  ``plots/README.md`` is rewritten with what
each figure shows, the command, and the wall time of each scenario.  The documentation site takes the
figures from ``plots/`` as they are (``benchmarks/tools/mkdocs_plots.py``, a MkDocs hook).
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
PLOTS = ROOT / "plots"


def shipped() -> list[Path]:
    return sorted(SCENARIOS.glob("*.yaml"))


def what_it_shows(path: Path) -> str:
    """The scenario's ``# Covers:`` sentence (every shipped scenario opens with one), without the prefix:
    its first comment line and the lines continuing it (up to the next ``# Capitalised`` line)."""
    found: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line[1:].strip() if line.startswith("#") else None
        if text is not None and text.startswith("Covers:"):
            found.append(text[len("Covers:") :].strip())
        elif found and text and not text[0].isupper():
            found.append(text)
        elif found:
            break
    return " ".join(found).replace("|", "/")


def compact_png(source: Path, target: Path) -> None:
    """``source`` re-encoded as a 256-colour palette PNG (matplotlib's figures use few colours)."""
    from PIL import Image

    with Image.open(source) as image:
        image.convert("RGB").quantize(colors=256).save(target, optimize=True)


def make_one(path: Path, work: Path) -> tuple[str, float]:
    """Run ``path`` as the command line does and copy its accuracy figure; (status line, wall seconds)."""
    from asyncfl.cli import main as asyncfl

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if raw.get("timing_only"):
        return "timing only: trains nothing, so no accuracy figure", 0.0
    out = work / path.stem
    start = time.perf_counter()
    code = asyncfl([str(path), "--out", str(out), "--quiet"])
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"{path}: the command exited with {code}")
    target = PLOTS / f"{path.stem}.png"
    compact_png(out / "accuracy_vs_time.png", target)
    kind = "a run"
    if "compare" in raw:
        kind = f"a study: {len(raw['compare'])} variants x {len(raw.get('seeds', [0]))} seeds"
    return f"{kind}, {wall / 60:.1f} min", wall


def redraw_one(path: Path, sweep: Path, work: Path) -> tuple[str, float]:
    """The figure of ``path`` redrawn from its finished sweep directory ``sweep``; (status line, summed run seconds)."""
    import shutil

    from asyncfl.cli import main as asyncfl
    from asyncfl.output.reading import read_summary

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    study = sweep / "study.yaml"
    if not study.is_file() or yaml.safe_load(study.read_text(encoding="utf-8")) != raw:
        raise SystemExit(f"--from-sweep {sweep}: its study.yaml is not {path}'s (run it again from the file)")
    copy = work / path.stem
    shutil.copytree(sweep, copy)
    if asyncfl(["plot", str(copy)]) != 0:
        raise SystemExit(f"{sweep}: plot failed")
    compact_png(copy / "accuracy_vs_time.png", PLOTS / f"{path.stem}.png")
    summaries = [read_summary(s.parent) for s in sweep.rglob("summary.json")]
    seconds = sum(float(s.get("real_seconds") or 0.0) for s in summaries)
    kind = f"a study: {len(raw['compare'])} variants x {len(raw.get('seeds', [0]))} seeds"
    status = f"{kind} (and tuning), drawn from its sweep: {len(summaries)} runs, {seconds / 60:.1f} min summed"
    return status, 0.0


def readme(rows: list[tuple[Path, str, float]], total: float, ran: int = 0, drawn: int = 0) -> str:
    """plots/README.md; ``ran`` scenarios were run now (``total`` seconds) and ``drawn`` redrawn from a sweep."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    made = "no scenario run then"
    if ran:
        made = f"{total / 60:.1f} min for the {ran} scenario(s) run then (wall time, figures on; other work on the "
        made += "machine makes it longer)"
    if drawn:
        made += f"; {drawn} figure(s) redrawn from a finished sweep (its runs' minutes are in the table)"
    lines = [
        "# Accuracy against virtual seconds, one figure per shipped scenario",
        "",
        "Generated by `python benchmarks/experiments/make_plots.py` (do not edit by hand): it runs each",
        "`scenarios/<name>.yaml` exactly as `python -m asyncfl scenarios/<name>.yaml --out DIR --quiet` does",
        "(a study: every variant and seed, mean over seeds with its band) and copies the",
        "`accuracy_vs_time.png` the run or sweep draws to `plots/<name>.png`, re-encoded with a 256-colour",
        "palette. `--only NAME ...` regenerates some of them.",
        "",
        "| figure | scenario | what it covers | run |",
        "| --- | --- | --- | --- |",
    ]
    for path, status, _ in rows:
        figure = f"[`{path.stem}.png`]({path.stem}.png)" if (PLOTS / f"{path.stem}.png").is_file() else "none"
        lines.append(f"| {figure} | `scenarios/{path.name}` | {what_it_shows(path)} | {status} |")
    lines += [
        "",
        f"Last regenerated on {when} on {platform.machine()} with {_cpus()} CPU core(s): {made}.",
        "",
    ]
    return "\n".join(lines)


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _previous_status() -> dict[str, str]:
    """The status column of the current plots/README.md, for the scenarios --only leaves alone."""
    path = PLOTS / "README.md"
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`scenarios/"):
            found[cells[1].strip("`")[len("scenarios/") :]] = cells[3]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="scenario names (file stems) to regenerate")
    parser.add_argument(
        "--from-sweep", nargs=2, action="append", default=[], metavar=("NAME", "DIR"),
        help="draw NAME's figure from its finished sweep directory DIR instead of running it again",
    )  # fmt: skip
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    paths = shipped()
    unknown = set(args.only or []) - {p.stem for p in paths}
    if unknown:
        allowed = ", ".join(p.stem for p in paths)
        parser.error(f"not a shipped scenario: {', '.join(sorted(unknown))}; allowed: {allowed}")
    PLOTS.mkdir(exist_ok=True)
    previous = _previous_status()
    rows, total, drawn = [], 0.0, 0
    with tempfile.TemporaryDirectory(prefix="make_plots_") as tmp:
        for path in paths:
            if args.only and path.stem not in args.only:
                rows.append((path, previous.get(path.name, "not regenerated"), 0.0))
                continue
            print(f"{path.relative_to(ROOT)} ...", flush=True)
            sweep = dict(args.from_sweep).get(path.stem)
            status, wall = redraw_one(path, Path(sweep), Path(tmp)) if sweep else make_one(path, Path(tmp))
            total, drawn = total + wall, drawn + bool(sweep)
            rows.append((path, status, wall))
            print(f"  {status}", flush=True)
    ran = sum(1 for path, _, _ in rows if not args.only or path.stem in args.only) - drawn
    (PLOTS / "README.md").write_text(readme(rows, total, ran, drawn), encoding="utf-8")
    print(f"{PLOTS / 'README.md'}: {total / 60:.1f} min in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
