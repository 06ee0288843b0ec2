"""Command line: ``python -m asyncfl [run] FILE.yaml``, ``validate FILE.yaml``, ``plot RUN_DIR``,
``compare RUN_DIR...``, ``report SWEEP_DIR``, ``reference``, ``traces convert IN``, ``advise FILE.yaml``.
Files with ``compare:``/``seeds:`` run as sweeps (asyncfl.study)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from asyncfl.config import ConfigError, load_scenario
from asyncfl.config.runnable import check_runnable
from asyncfl.study.cli import (
    add_compare_parser,
    add_report_parser,
    add_sweep_options,
    compare_dirs,
    plot_dir,
    report_dir,
    route,
)
from asyncfl.tools import add_advise_parser, add_traces_parser, advise_command, traces_command

COMMANDS = ("run", "validate", "plot", "compare", "report", "reference", "traces", "advise")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m asyncfl", description="Federated learning on a virtual clock.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a scenario (the default command)")
    run.add_argument("scenario", type=Path, nargs="?")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override a scenario key, e.g. --set server.k=5 (repeatable)")  # fmt: skip
    run.add_argument("--out", type=Path, help="write the run into this directory (must be new or empty)")
    run.add_argument("--seed", type=int, help="same as --set seed=N")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    add_sweep_options(run)
    validate = sub.add_parser("validate", help="check a scenario and report every problem")
    validate.add_argument("scenario", type=Path)
    validate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    plot = sub.add_parser("plot", help="re-render the figures of a run (or sweep) directory")
    plot.add_argument("run_dir", type=Path)
    plot.add_argument("--window", metavar="START:END",
                      help="timeline.png: virtual seconds e.g. 100:400 or 500: (default: first 30 rounds)")  # fmt: skip
    plot.add_argument("--clients", metavar="N|ID,ID,...",
                      help="timeline.png: how many recorded clients (default 16), or which ones")  # fmt: skip
    add_compare_parser(sub)
    add_report_parser(sub)
    add_traces_parser(sub)
    add_advise_parser(sub)
    reference = sub.add_parser("reference", help="print every scenario key with its default and allowed values")
    reference.add_argument("--update", type=Path, metavar="README", help="rewrite the reference block in this file")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv.insert(0, "run")
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as SIGPIPE would
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit-time flush must not fail
        return 141


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "reference":
        from asyncfl.config.reference import reference_markdown, update_block

        if args.update is not None:
            update_block(args.update)
            print(f"updated the scenario reference in {args.update}")
        else:
            print(reference_markdown())
        return 0
    if args.command == "plot":
        return plot_dir(args.run_dir, args.window, args.clients)
    if args.command == "compare":
        return compare_dirs(args)
    if args.command == "report":
        return report_dir(args.sweep_dir, args.baseline)
    if args.command == "traces":
        return traces_command(args)
    if args.command == "advise":
        return advise_command(args)
    overrides = list(args.overrides)
    if getattr(args, "seed", None) is not None:
        overrides.append(f"seed={args.seed}")
    resume = getattr(args, "resume", None)
    if args.command == "run" and resume is not None and not (resume / "study.yaml").is_file():
        return _resume_run(args, overrides)
    routed = route(args, overrides)
    if routed is not None:
        return routed
    scenario = load_scenario(args.scenario, overrides)
    check_runnable(scenario)
    if args.command == "validate":
        s = scenario
        print(f"{args.scenario}: valid ({s.server.mode}, {s.algorithm.name}, {s.data.clients} clients)")
        return 0
    if args.out is not None:
        from asyncfl.output.run_directory import refuse_used_out

        refuse_used_out(args.out, "refusing to overwrite a run.")
    from asyncfl.runner import RunInterrupted, run_scenario

    try:
        run_dir = run_scenario(scenario, args.out, quiet=args.quiet, announce=_announce)
    except RunInterrupted as exc:
        return _interrupted(exc.run_dir)
    return _finished(run_dir)


def _resume_run(args: argparse.Namespace, overrides: list[str]) -> int:
    """``run --resume RUN_DIR``: continue a killed run from its last checkpoint, as it was configured."""
    if args.scenario is not None or overrides or args.out is not None:
        raise ConfigError(
            f"--resume {args.resume}: a run resumes as it was configured; give no FILE, --set, --seed or --out."
        )
    from asyncfl.checkpoint import read_summary_status
    from asyncfl.output.run_directory import ENDED

    status = read_summary_status(args.resume)
    if status in ENDED:
        print(f"{args.resume}: this run already ended ({status}); nothing to resume.")
        return 3 if status == "diverged" else 0  # the exit status a run's end always has
    from asyncfl.runner import RunInterrupted, resume_run

    try:
        run_dir = resume_run(args.resume, quiet=args.quiet, announce=_announce)
    except RunInterrupted as exc:
        return _interrupted(exc.run_dir)
    return _finished(run_dir)


def _announce(run_dir: Path) -> None:
    """The run directory as the run starts, so that its files can be watched (on stderr: stdout's last
    line is the run directory once the run has ended)."""
    print(f"run directory: {run_dir}", file=sys.stderr, flush=True)


def _interrupted(run_dir: Path) -> int:
    """Ctrl-C: where the run is and the exact command that continues it."""
    import shlex

    print(
        f"interrupted: summary.json, the logs and the figures of what has run are in {run_dir}; continue it with\n"
        f"  python -m asyncfl run --resume {shlex.quote(str(run_dir))}",
        file=sys.stderr,
    )
    return 130


def _finished(run_dir: Path) -> int:
    """The run directory on stdout (its figures are drawn by the run), and an exit status that says
    whether the run diverged."""
    import json

    print(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    for warning in summary.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    if summary["status"] == "diverged":
        print(
            f"error: the run diverged at round {summary['diverged_round']}: the model's loss or parameters became "
            f"NaN or infinite (a smaller training.lr or algorithm.server_lr usually helps). Everything up to "
            f"that round is in {run_dir}.",
            file=sys.stderr,
        )
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
