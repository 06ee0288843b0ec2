"""``run`` and ``validate`` of one scenario (a study is routed to :mod:`asyncfl.cli.study`), and
``run --resume RUN_DIR``: what the command prints and the exit status it returns."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from asyncfl.cli.flower_validate import apps_importable_from_here, check_flower_apps, flower_summary
from asyncfl.cli.study import route
from asyncfl.config import ConfigError, load_scenario
from asyncfl.config.runnable import check_runnable, scenario_warnings
from asyncfl.config.training_work import training_work, training_work_warning


def run_command(args: argparse.Namespace) -> int:
    """``run`` or ``validate`` FILE (a scenario or a study)."""
    overrides = list(args.overrides)
    if getattr(args, "seed", None) is not None:
        overrides.append(f"seed={args.seed}")
    resume = getattr(args, "resume", None)
    if args.command == "run" and resume is not None and not (resume / "study.yaml").is_file():
        return resume_run_command(args, overrides)
    routed = route(args, overrides)
    if routed is not None:
        return routed
    scenario = load_scenario(args.scenario, overrides)
    check_runnable(scenario)
    if args.command == "validate" and scenario.flower is not None:  # Flower apps on the clock
        return _validate_flower(args.scenario, scenario)
    work = training_work(scenario).sentence()
    if args.command == "validate":
        s = scenario
        print(f"{args.scenario}: valid ({s.server.mode}, {s.algorithm.name}, {s.data.clients} clients)")
        print(work)
        _warn(scenario_warnings(scenario))
        return 0

    if scenario.flower is not None:  # a Flower app on the clock (as a sweep runs one: its apps must be named)
        return run_flower_scenario(scenario, args.out, args.quiet)

    def announce(run_dir: Path) -> None:
        announce_run_dir(run_dir)  # stderr's first line: where the run writes
        print(work, file=sys.stderr)  # stdout's last line is the run directory
        _warn(scenario_warnings(scenario))

    if args.out is not None:
        from asyncfl.output.run_directory import refuse_used_out

        refuse_used_out(args.out, "refusing to overwrite a run.")
    from asyncfl.runner.loop_guards import RunInterrupted
    from asyncfl.runner.start import run_scenario

    try:
        run_dir = run_scenario(scenario, args.out, quiet=args.quiet, announce=announce)
    except RunInterrupted as exc:
        return report_interrupted(exc.run_dir, resume_command(exc.run_dir))
    return report_finished(run_dir)


def run_flower_scenario(
    scenario, out: Path | None, quiet: bool, server_app=None, client_app=None, *, run_config=None, app_dir=None
) -> int:
    """Run a scenario with Flower apps (:mod:`asyncfl.flower`): the ``flower`` command, or ``run`` of a scenario whose
    ``flower:`` names its ClientApp; ``server_app``/``client_app``: the flags' (None: the scenario's);
    ``run_config``/``app_dir``: ``--run-config``'s and the app folder's (:func:`asyncfl.flower.run`)."""
    from asyncfl.flower.apps import require_flwr  # flwr: an optional extra

    require_flwr()  # before anything imports flwr: a missing extra is one line with the install command
    from asyncfl.flower.start import run_flower  # built on flwr: imported once it is known to be there

    if out is not None:
        from asyncfl.output.run_directory import refuse_used_out

        refuse_used_out(out, "refusing to overwrite a run.")
    apps_importable_from_here()
    where = ("--server-app", "--client-app")
    from asyncfl.runner.loop_guards import RunInterrupted

    try:
        run = run_flower(
            server_app, client_app, scenario, out, run_config=run_config, app_dir=app_dir, quiet=quiet, where=where,
            run_config_where="--run-config", announce=announce_run_dir,
        )  # fmt: skip
    except RunInterrupted as exc:  # a K-async run continues from its checkpoint; a ServerApp run cannot
        words = ["flower", *([str(app_dir)] if app_dir else [])]
        again = resume_command(exc.run_dir, *words) if scenario.server.mode == "k_async" else None
        return report_interrupted(exc.run_dir, again)
    return report_finished(run.path)


def _validate_flower(source: Path, scenario) -> int:
    """``validate`` of a Flower scenario: its apps loaded, and only the lines that apply to a Flower run."""
    check_flower_apps(scenario)
    for line in flower_summary(source, scenario):
        print(line)
    work = training_work_warning(scenario)  # asyncfl's local steps: the ClientApp trains, not asyncfl
    _warn([warning for warning in scenario_warnings(scenario) if warning != work])
    return 0


def resume_run_command(args: argparse.Namespace, overrides: list[str]) -> int:
    """``run --resume RUN_DIR``: continue a killed run from its last checkpoint, as it was configured."""
    if args.scenario is not None or overrides or args.out is not None:
        raise ConfigError(
            f"--resume {args.resume}: a run resumes as it was configured; give no FILE, --set, --seed or --out."
        )
    from asyncfl.output.run_directory import ENDED
    from asyncfl.runner.checkpoint import read_summary_status

    status = read_summary_status(args.resume)
    if status in ENDED:
        print(f"{args.resume}: this run already ended ({status}); nothing to resume.")
        return 3 if status == "diverged" else 0  # the exit status a run's end always has
    from asyncfl.runner.loop_guards import RunInterrupted
    from asyncfl.runner.start import resume_run

    try:
        run_dir = resume_run(args.resume, quiet=args.quiet, announce=announce_run_dir)
    except RunInterrupted as exc:
        return report_interrupted(exc.run_dir, resume_command(exc.run_dir))
    return report_finished(run_dir)


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def announce_run_dir(run_dir: Path) -> None:
    """The run directory as the run starts, so that its files can be watched (on stderr: stdout's last
    line is the run directory once the run has ended)."""
    print(f"run directory: {run_dir}", file=sys.stderr, flush=True)


def resume_command(run_dir: Path, *words: str) -> str:
    """The command that continues a run from its checkpoint: ``run --resume RUN_DIR``, or ``words`` (the flower
    command and its app folder) before ``--resume RUN_DIR``."""
    import shlex

    return shlex.join(["python", "-m", "asyncfl", *(words or ("run",)), "--resume", str(run_dir)])


def report_interrupted(run_dir: Path, again: str | None) -> int:
    """Ctrl-C: where the run is and the exact command that continues it (``again``; None: it cannot be continued,
    a Flower ServerApp run)."""
    how = f"continue it with\n  {again}" if again else "a Flower ServerApp run cannot be continued: run it again"
    print(
        f"interrupted: summary.json, the logs and the figures of what has run are in {run_dir}; {how}", file=sys.stderr
    )
    return 130


def report_finished(run_dir: Path) -> int:
    """The run directory on stdout (its figures are drawn by the run), and an exit status that says
    whether the run diverged."""
    from asyncfl.output.reading import read_summary

    print(run_dir)
    summary = read_summary(run_dir)
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
