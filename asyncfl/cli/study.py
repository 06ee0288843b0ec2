"""Command-line glue for studies: sweeps (run / validate / --resume), ``compare`` and ``report``."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from asyncfl.config import ConfigError, apply_override, read_scenario, read_yaml
from asyncfl.config.runnable import check_runnable
from asyncfl.output.folders import make_directory
from asyncfl.output.run_directory import refuse_used_out
from asyncfl.study.claims import unreachable_families
from asyncfl.study.spec import Study, build_study, is_study
from asyncfl.study.tuning import set_name


def add_sweep_options(run: argparse.ArgumentParser) -> None:
    group = run.add_argument_group("studies (scenario files with compare: / seeds:) and resuming")
    group.add_argument(
        "--executor", choices=("local", "ray"), help="run the variant x seed runs here (default) or as Ray tasks"
    )
    group.add_argument("--address", help="Ray cluster address (default: start a local Ray instance)")
    group.add_argument("--gpus-per-task", type=float, help="GPUs per Ray task (default 0)")
    group.add_argument("--cpus-per-task", type=float, help="CPUs per Ray task (default 1)")
    group.add_argument("--resume", type=Path, metavar="DIR",
                       help="continue a run (RUN_DIR: from its last checkpoint; give no FILE, --set, --seed or --out) "
                            "or a sweep (SWEEP_DIR: skip finished runs, redo the others; FILE optional)")  # fmt: skip


def add_compare_parser(sub) -> None:
    compare = sub.add_parser("compare", help="overlay runs made separately (run or sweep directories)")
    compare.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR", help="run or sweep directories")
    compare.add_argument("--out", type=Path, help="where to write (default runs/compare/<timestamp>)")
    compare.add_argument("--label", dest="labels", action="append", default=[],
                         help="label per RUN_DIR (repeatable); equal labels = seeds of one variant, which must share "
                              "every setting but the seed (default: the scenario name, split by setting)")  # fmt: skip
    compare.add_argument("--target", dest="targets", action="append", type=float, default=[],
                         help="target accuracy for the time-to-target table (repeatable)")  # fmt: skip


def add_report_parser(sub) -> None:
    report = sub.add_parser("report", help="mean ± 95%% CI over seeds and paired differences vs a baseline variant")
    report.add_argument("sweep_dir", type=Path, metavar="SWEEP_DIR", help="a sweep directory")
    report.add_argument("--baseline", help="the variant to pair against (default: the study's baseline: key)")


def report_dir(sweep_dir: Path, baseline: str | None) -> int:
    """Write report.csv / report.md of a sweep directory and print the table."""
    from asyncfl.output.lock import writing
    from asyncfl.study.compare import STUDY_FILE

    if not (sweep_dir / STUDY_FILE).is_file():
        raise ConfigError(f"{sweep_dir}: not a sweep directory (no {STUDY_FILE}); report needs a study's runs.")
    with writing(sweep_dir, "sweep"):  # a sweep still running writes its own report: one writer at a time
        return _write_sweep_report(sweep_dir, baseline)


def _write_sweep_report(sweep_dir: Path, baseline: str | None) -> int:
    from asyncfl.study.compare import STUDY_FILE, sweep_records
    from asyncfl.study.completeness import study_completeness
    from asyncfl.study.report import write_report
    from asyncfl.study.spec import declared_runs
    from asyncfl.study.tuned_sets import measure_sets

    raw = read_yaml(sweep_dir / STUDY_FILE)
    records = sweep_records(sweep_dir)
    if not records:
        raise ConfigError(f"{sweep_dir}: no finished runs to report (no <variant>/seed<N>/metrics.csv).")
    declared, seeds = declared_runs(raw)  # and the runs a variant tuned on several measures added
    completeness = study_completeness(sweep_dir, declared + tuple(measure_sets(sweep_dir)), seeds)
    if completeness.partial:  # still a useful report, but not the study: said here and atop report.md
        print(f"warning: {sweep_dir}: {completeness.notice(sweep_dir)}", file=sys.stderr)
    variants = [v for v in dict.fromkeys(r.label for r in records) if not completeness.has_no_results(v)]
    chosen = baseline if baseline is not None else raw.get("baseline")
    if baseline is None and chosen is not None and completeness.has_no_results(chosen):
        print(f"warning: {sweep_dir / STUDY_FILE}: baseline {chosen!r} has no finished run, so the report "
              "pairs nothing against it (no verdicts).", file=sys.stderr)  # fmt: skip
        chosen = None
    if chosen is not None and chosen not in variants:
        where = "--baseline" if baseline is not None else f"{sweep_dir / STUDY_FILE}: baseline"
        raise ConfigError(f"{where}: {chosen!r} is not a variant with finished runs; allowed: {', '.join(variants)}.")
    claims, note = sweep_claims(sweep_dir, raw)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    written = write_report(sweep_dir, records, chosen, raw.get("targets") or (), claims, note, completeness)
    print(written[1].read_text(encoding="utf-8"), end="")
    for path in written:
        print(path)
    return 0


def sweep_claims(sweep_dir: Path, raw: dict) -> tuple[list, str]:
    """The claims a sweep was run with (recorded at its start) and, when its study.yaml now says otherwise,
    a note saying so: claims are fixed before the runs, so the report tests the recorded ones.  A sweep
    from before the record existed is read from its study.yaml."""
    from asyncfl.study.claims import DECLARED_FILE, declared_claims, declared_families, study_claims
    from asyncfl.study.compare import STUDY_FILE

    recorded, claims = declared_claims(sweep_dir)
    families, families_note = declared_families(sweep_dir, raw)
    if not recorded:
        return study_claims(raw, str(sweep_dir / STUDY_FILE)), families_note
    note = "" if claims == raw.get("claims") else (
        f"the claims: in {sweep_dir / STUDY_FILE} differ from those this sweep was run with ({DECLARED_FILE}); "
        "the report tests the claims recorded at its start, since claims are fixed before the runs (a new "
        "question belongs in a new study, visibly asked after the fact)."
    )  # fmt: skip
    note = " ".join(n for n in (note, families_note) if n)
    return study_claims({**raw, "claims": claims, "families": families}, str(sweep_dir / DECLARED_FILE)), note


def load_raw(path: Path | None, overrides: list[str], resume: Path | None) -> tuple[dict, str]:
    """The scenario file (or, resuming without one, the sweep's study.yaml) with overrides applied."""
    if path is None:
        if resume is None:
            raise ConfigError("give a scenario FILE (or --resume SWEEP_DIR to continue a sweep).")
        path = resume / "study.yaml"
        if not path.is_file():
            raise ConfigError(f"--resume {resume}: not a sweep directory (no study.yaml).")
        raw = read_yaml(path)  # written by the sweep, trace paths already resolved
    else:
        raw = read_scenario(path)
    for item in overrides:
        apply_override(raw, item)
    return raw, str(path)


def sweep_flags_used(args: argparse.Namespace) -> list[str]:
    names = ("executor", "address", "gpus_per_task", "cpus_per_task", "resume")
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n, None) is not None]


def study_from_args(raw: dict, source: str, args: argparse.Namespace) -> Study:
    if getattr(args, "seed", None) is not None and "seeds" in raw:
        raise ConfigError(f"{source}: --seed does not apply to a study with seeds:; use --set 'seeds=[...]'.")
    return build_study(raw, source)


def validate_study(study: Study, source: str) -> int:
    print(
        f"{source}: valid study: {len(study.variants)} variant(s) x {len(study.seeds)} seed(s) = "
        f"{len(study.runs)} runs ({', '.join(study.variants)}; seeds {', '.join(map(str, study.seeds))})"
    )
    if study.tuning is not None:
        plan = study.tuning
        print(
            f"  and first {len(plan.runs)} tuning runs: {len(plan.points)} grid point(s) x "
            f"{len(plan.spec.seeds)} tuning seed(s) for each of {', '.join(plan.variants)}"
            + "".join(
                f"; {v} skips {', '.join(keys)} ({len(plan.points_of(v))} point(s))"
                for v, keys in plan.skipped.items()
                if v in plan.variants
            )  # fmt: skip
        )
        if plan.also:  # claimed on several measures: tuned on each (asyncfl.study.tuning)
            sets = [set_name(v, m) for v, measures in plan.also.items() for m in measures]
            print(
                "  tuned on each measure its claims test: "
                + "; ".join(f"{v} on {', '.join(plan.measures_of(v))}" for v in plan.also)
                + f"; where a later measure chooses another point, its runs ({len(study.seeds)} seed(s) each): "
                + ", ".join(sets)
            )
    warn_study(study)
    return 0


def warn_study(study: Study) -> None:
    """What is valid but cannot work as meant: a claim family no seed count here can support."""
    for warning in unreachable_families(study.claims, len(study.seeds)):
        print(f"warning: {warning}", file=sys.stderr)


def run_study(study: Study, args: argparse.Namespace) -> int:
    from asyncfl.sweep.study_sweep import run_sweep

    if args.out is not None and args.resume is not None:
        raise ConfigError("--out and --resume: give one of them (--resume names the sweep directory).")
    warn_study(study)
    result = run_sweep(
        study,
        resume=args.resume,
        out=args.out,
        executor=args.executor or "local",
        address=args.address,
        gpus_per_task=args.gpus_per_task or 0.0,
        cpus_per_task=args.cpus_per_task or 1.0,
        quiet=args.quiet,
    )
    for job, error in result.failures:
        print(f"error: {job.variant} seed{job.seed} failed: {error}", file=sys.stderr)
    print(result.sweep_dir)
    return 1 if result.failures else 0


def compare_dirs(args: argparse.Namespace) -> int:
    from asyncfl.study.compare import records_from_paths, write_comparison

    records = records_from_paths(args.run_dirs, args.labels)
    out = args.out or Path("runs") / "compare" / datetime.now().strftime("%Y%m%d-%H%M%S")
    refuse_used_out(out)
    make_directory(out, "--out")
    for written in write_comparison(out, records, args.targets):
        print(written)
    return 0


def route(args: argparse.Namespace, overrides: list[str]) -> int | None:
    """Handle ``run``/``validate`` when the file is a study (or a sweep flag is used); None otherwise."""
    resume = getattr(args, "resume", None)
    raw, source = load_raw(args.scenario, overrides, resume)
    flags = sweep_flags_used(args)
    if not is_study(raw):
        if flags:
            verb = "applies" if len(flags) == 1 else "apply"
            raise ConfigError(f"{source}: {', '.join(flags)} {verb} only to studies (files with compare: or seeds:).")
        return None
    study = study_from_args(raw, source, args)
    for run in study.runs:  # before any run starts, not as one failure per run
        check_runnable(run.scenario)
    if args.command == "validate":
        return validate_study(study, source)
    return run_study(study, args)
