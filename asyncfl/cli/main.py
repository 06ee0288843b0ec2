"""Command line: ``python -m asyncfl [run] FILE.yaml``, ``validate FILE.yaml``, ``plot RUN_DIR``,
``compare RUN_DIR...``, ``report SWEEP_DIR``, ``reference``, ``traces convert IN``, ``advise FILE.yaml``,
``flower [APP_DIR] FILE.yaml [--run-config "k=v"]``.
Files with ``compare:``/``seeds:`` run as sweeps (asyncfl.study).  The parser and the dispatch; each
command's code is in its own module of this package."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from asyncfl.cli.advise import add_advise_parser, advise_command
from asyncfl.cli.flower import add_flower_parser, flower_command
from asyncfl.cli.plot import add_plot_parser, plot_dir
from asyncfl.cli.run import run_command
from asyncfl.cli.study import add_compare_parser, add_report_parser, add_sweep_options, compare_dirs, report_dir
from asyncfl.cli.traces import add_traces_parser, traces_command
from asyncfl.errors import ConfigError

COMMANDS = ("run", "validate", "plot", "compare", "report", "reference", "traces", "advise", "flower")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m asyncfl", description="Federated learning on a virtual clock.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a scenario (the default command)")
    run.add_argument("scenario", type=Path, nargs="?", help="scenario or study file (YAML)")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override a scenario key, e.g. --set server.k=5 (repeatable)")  # fmt: skip
    run.add_argument("--out", type=Path, help="write the run into this directory (must be new or empty)")
    run.add_argument("--seed", type=int, help="same as --set seed=N")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    add_sweep_options(run)
    validate = sub.add_parser("validate", help="check a scenario and report every problem")
    validate.add_argument("scenario", type=Path, help="scenario or study file (YAML)")
    validate.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario key, as for run (repeatable)",
    )
    add_plot_parser(sub)
    add_compare_parser(sub)
    add_report_parser(sub)
    add_traces_parser(sub)
    add_advise_parser(sub)
    add_flower_parser(sub)
    reference = sub.add_parser("reference", help="print every scenario key with its default and allowed values")
    reference.add_argument(
        "--update",
        type=Path,
        metavar="FILE.md",
        help="rewrite the reference block in this file (docs/reference/scenario-keys.md)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        if _command_word(argv[0]):  # `study --help` is no file to run: run's help would mislead
            print(
                f"error: unknown command {argv[0]!r}; allowed: {', '.join(COMMANDS)}, or a scenario or study file "
                "(python -m asyncfl FILE.yaml runs either)",
                file=sys.stderr,
            )
            return 2
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
    except MemoryError as exc:  # a run's (RunOutOfMemory) names its stage and directory; plot, loading: say so
        said = str(exc) if hasattr(exc, "stage") else f"out of memory ({exc or 'MemoryError'}): {args.command} stopped"
        print(f"error: {said}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as SIGPIPE would
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit-time flush must not fail
        return 141


def _command_word(word: str) -> bool:
    """A bare word (no suffix, no folder) that names no file here: meant as a command, not a FILE to run."""
    return word.isidentifier() and not Path(word).exists()


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
    if args.command == "flower":
        return flower_command(args)
    return run_command(args)
