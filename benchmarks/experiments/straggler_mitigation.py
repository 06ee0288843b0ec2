"""The straggler-mitigation study (issue 21 item 6): every variant of scenarios/straggler_mitigation.yaml
over its seeds, one command, then the report, the cost side and the figure.

    python benchmarks/experiments/straggler_mitigation.py                    # the whole study (10 seeds)
    python benchmarks/experiments/straggler_mitigation.py --seeds 2 --out /tmp/quick --docs /tmp/quick
    python benchmarks/experiments/straggler_mitigation.py --write-base /tmp/base.yaml   # for advise
    python benchmarks/experiments/straggler_mitigation.py --out runs/straggler --executor ray   # both cores;
                                             # the same --out again resumes (finished runs are kept)
    python benchmarks/experiments/straggler_mitigation.py --page straggler_mitigation_margin \
        --set tune.divergence_margin=1 --set "seeds=[30, 31, 32, 33, 34, 35, 36, 37, 38, 39]"   # a follow-up

Runs the study exactly as ``python -m asyncfl scenarios/straggler_mitigation.yaml`` does (its tuning runs,
then the evaluation runs with each variant's chosen lr; the local executor runs one after the other in this
process, ``--executor ray`` one per core), into --out (default runs/straggler_mitigation/<timestamp>; a
sweep directory there already is resumed).  The sweep directory gets the usual
comparison and report.md, plus cost.csv / cost.md (:mod:`asyncfl.study.cost`).  Then writes
<docs>/results/straggler_mitigation.md (the report table with verdicts against the study's baseline, the
cost table, the study's wall time) and <docs>/figures/straggler_mitigation.png (accuracy against virtual
time, mean over seeds with a ± one std band), and prints the wall time.  --docs defaults to docs/.  --page
names another page (and figure) for a run with --set overrides, which its header then lists.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from asyncfl.output.reading import read_csv
from asyncfl.output.tables import markdown
from asyncfl.study.claims import Claim
from asyncfl.study.compare import sweep_records
from asyncfl.study.cost import write_costs
from asyncfl.study.report import markdown_rows
from asyncfl.study.spec import STUDY_KEYS, load_study
from asyncfl.study.tuning import TUNING_CSV
from asyncfl.study.tuning_results import tuning_section
from asyncfl.sweep.study_sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402
from benchmarks.tools.study_wall_clock import StudyWallClock  # noqa: E402

STUDY_FILE = ROOT / "scenarios" / "straggler_mitigation.yaml"
NAME = "straggler_mitigation"
SHOWN = ("final accuracy", "last-quarter accuracy", "time to ")  # the report measures in the docs table


def write_base(path: Path) -> None:
    """The study's base scenario alone (no compare/seeds/targets/baseline, seed 0): what advise takes."""
    raw = yaml.safe_load(STUDY_FILE.read_text(encoding="utf-8"))
    base = {k: v for k, v in raw.items() if k not in STUDY_KEYS}
    path.write_text(yaml.safe_dump({**base, "seed": 0}, sort_keys=False), encoding="utf-8")


def report_table(sweep_dir: Path) -> list[dict[str, str]]:
    rows = [r for r in read_csv(sweep_dir / "report.csv") if r["measure"].startswith(SHOWN)]
    for r in rows:
        for key in ("mean", "ci_half_width", "diff_mean", "diff_ci_half_width"):
            r[key] = float(r[key]) if r.get(key) not in (None, "") else float("nan")
        for key in ("n", "seeds", "paired_seeds"):
            r[key] = int(r[key]) if r.get(key) not in (None, "") else 0
    return markdown_rows(rows)


def findings(sweep_dir: Path, baseline: str) -> list[str]:
    """One line per variant: its verdicts against the baseline, measure by measure."""
    lines: dict[str, list[str]] = {}
    for r in read_csv(sweep_dir / "report.csv"):
        if r["variant"] == baseline or not r["measure"].startswith(SHOWN):
            continue
        lines.setdefault(r["variant"], []).append(f"{r['measure']}: {r['vs_baseline']}")
    return [f"- **{variant}** vs {baseline}: " + "; ".join(parts) + "." for variant, parts in lines.items()]


def write_docs(
    sweep_dir: Path,
    docs: Path,
    wall_s: float,
    seeds: int,
    baseline: str,
    targets: list[float],
    load,
    executor: str = "local",
    commands: int | None = 1,
    page: str = NAME,
    overrides: Sequence[str] = (),
    claims: Sequence[Claim] = (),
    first_load: Mapping[str, str] | None = None,
) -> None:
    """The page: ``wall_s`` over ``commands`` commands (None: a sweep resumed from before its wall time was
    kept, ``wall_s`` this command's alone); the tuning choices beside the verdicts that rest on them.  ``load``:
    the machine's load before this command; ``first_load``: before the study's first command (the wall-time
    record's ``load``), said apart from this command's where the study took several."""
    results, figures = docs / "results", docs / "figures"
    results.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sweep_dir / "accuracy_vs_time.png", figures / f"{page}.png")
    cost = (sweep_dir / "cost.md").read_text(encoding="utf-8")
    report_intro = (sweep_dir / "report.md").read_text(encoding="utf-8").split("\n\n")[0]
    claims_file = sweep_dir / "claims.md"  # with claims: in the study file (declared before the runs)
    claim_lines = []
    if claims_file.is_file():
        claim_lines = ["## Declared claims, Holm-corrected", "", claims_file.read_text(encoding="utf-8"), ""]
        if (sweep_dir / "claims_seeds.md").is_file():  # every pair a p-value rests on, to recheck it by hand
            for suffix in (".md", ".csv"):
                shutil.copyfile(sweep_dir / f"claims_seeds{suffix}", results / f"{page}_claims_seeds{suffix}")
            # ../results/ so that the link also resolves where docs_sync copies this block (docs/findings/)
            pairs = f"{page}_claims_seeds"
            claim_lines[-1:-1] = [f"Every seed's pair behind these rows: [{pairs}.md](../results/{pairs}.md)"
                             f" (unrounded: `{pairs}.csv`)."]  # fmt: skip
    tuning = []
    if (sweep_dir / TUNING_CSV).is_file():  # which step size each variant got decides some verdicts: publish it
        shutil.copyfile(sweep_dir / TUNING_CSV, results / f"{page}_tuning.csv")
        tuning = [
            tuning_section(sweep_dir, claims, f"Every point on every tuning seed: `docs/results/{page}_tuning.csv`"),
            "",
        ]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    flags = "".join(f" --set {shlex.quote(o)}" for o in overrides)
    flags = (f" --page {page}" if page != NAME else "") + flags
    text = "\n".join([
        f"# Straggler mitigation ({seeds} seeds{', ' + ', '.join(overrides) if overrides else ''})",
        "",
        f"Generated by `python benchmarks/experiments/straggler_mitigation.py{flags}` on {when} from "
        f"`scenarios/straggler_mitigation.yaml` (its header says how the population, the deadline and the "
        f"targets {', '.join(f'{t:g}' for t in targets)} were chosen). Wall time of the whole study: "
        f"**{wall_s / 60:.1f} min** ({wall_s:,.0f} s{_over(commands)}) "
        f"with the {executor} executor, figures on, on {platform.machine()} with {_cores()} CPU core(s) "
        f"{_load_where(commands, first_load)}.",
        "",
        f"![accuracy against virtual time](../figures/{page}.png)",
        "",
        "## Accuracy and time to target",
        "",
        report_intro,
        "",
        markdown(report_table(sweep_dir)),
        *claim_lines,
        *tuning,
        "## Every comparison against the baseline (not corrected for multiplicity)",
        "",
        *findings(sweep_dir, baseline),
        "",
        "## Cost",
        "",
        cost,
    ]) + load.note()  # fmt: skip
    (results / f"{page}.md").write_text(text, encoding="utf-8")


def _load_where(commands: int | None, first_load: Mapping[str, str] | None) -> str:
    """Where the page gives the machine's load: a study run by one command, at the end; one resumed, the
    first command's load here (its 1-minute average, as the wall-time record keeps it) and the last's at the
    end (the last may have run no more than the page itself)."""
    if not commands or commands == 1 or not first_load:
        return "(the machine's load before it started is at the end of this page)"
    one, cores = float(first_load["load_1min"]), int(first_load["cores"])
    forced = ", forced on a busy machine" if first_load.get("forced") == "true" else ""
    return (
        f"(the machine's 1-minute load average before its first command: {one:.2f} on {cores} cores "
        f"({one / cores:.2f} per core){forced}; before the last of the {commands}, which wrote this page, at the "
        "end of this page)"
    )


def _over(commands: int | None) -> str:
    if commands is None:
        return "; this command of a resumed sweep only"
    return f" over {commands} commands: a resumed sweep" if commands > 1 else ""


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="the sweep directory (new or empty)")
    parser.add_argument("--seeds", type=int, help="run seeds 0..N-1 instead of the file's seeds (a quick check)")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="where results/ and figures/ go")
    parser.add_argument("--write-base", type=Path, metavar="FILE", help="write the base scenario (for advise), exit")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a key of the study file (repeatable)")  # fmt: skip
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="local: one run after the other; ray: one run per core")  # fmt: skip
    parser.add_argument("--page", default=NAME, help="the name of the page and figure written into --docs")
    add_force_argument(parser)
    args = parser.parse_args(argv)
    if args.write_base is not None:
        write_base(args.write_base)
        return 0
    load = check_load(args.force, f"{args.docs}/results/{args.page}.md")
    overrides = list(args.overrides)
    if args.seeds is not None:
        overrides.append(f"seeds={list(range(args.seeds))}")
    study = load_study(STUDY_FILE, overrides)
    out = args.out or ROOT / "runs" / NAME / datetime.now().strftime("%Y%m%d-%H%M%S")
    resume = out if (out / "study.yaml").is_file() else None  # a sweep started before: keep its finished runs
    with StudyWallClock(out, fresh=resume is None, load=load.fields()) as clock:  # over every command that ran it
        result = run_sweep(study, resume=resume, out=None if resume else out, executor=args.executor)
        write_costs(result.sweep_dir, sweep_records(result.sweep_dir), study.baseline)
    record = clock.record()
    wall_s, commands = (record["wall_seconds"], record["commands"]) if record else (clock.seconds(), None)
    write_docs(
        result.sweep_dir, args.docs, wall_s, len(study.seeds), study.baseline, list(study.targets), load,
        args.executor, commands=commands, page=args.page, overrides=overrides, claims=study.claims,
        first_load=(record or {}).get("load"),
    )  # fmt: skip
    print(f"{NAME}: {len(study.runs)} runs ({len(study.variants)} variants x {len(study.seeds)} seeds), "
          f"wall time {wall_s:,.0f} s ({wall_s / 60:.1f} min); sweep {result.sweep_dir}")  # fmt: skip
    for job, why in result.failures:
        print(f"FAILED {job.variant} seed{job.seed}: {why}", file=sys.stderr)
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())
