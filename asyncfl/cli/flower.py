"""``flower APP_DIR SCENARIO.yaml [--run-config "k=v ..."]``: a Flower app folder run as ``flwr run APP_DIR`` runs
it (:mod:`asyncfl.flower.app_folder`), on the scenario's virtual clock; or ``flower SCENARIO.yaml --server-app
pkg.module:app --client-app pkg.module:app``, the apps named by the flags or the scenario's ``flower:`` section.
The two forms are told apart by the first argument: a folder is an app folder, a file a scenario.
``flower [APP_DIR] --resume RUN_DIR [--client-app pkg.module:app]`` continues a K-async Flower run from its last
checkpoint (:mod:`asyncfl.flower.resume`; APP_DIR: the app folder it was started from)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from asyncfl.cli.run import run_flower_scenario
from asyncfl.config import ConfigError, apply_override, load_scenario, read_scenario
from asyncfl.study.spec import is_study


def add_flower_parser(sub) -> None:
    said = "run a Flower app (an app folder, or a ServerApp and ClientApp) on the scenario's virtual clock"
    flower = sub.add_parser("flower", help=said)
    flower.add_argument(
        "first", type=Path, nargs="?", metavar="[APP_DIR]",
        help="a Flower app folder (its pyproject.toml names the apps)",
    )  # fmt: skip
    flower.add_argument(
        "scenario", type=Path, nargs="?", metavar="SCENARIO.yaml", help="the population, clock, stop and output"
    )
    flower.add_argument("--run-config", dest="run_config", action="append", default=[], metavar='"KEY=VALUE ..."',
                        help="override the run config as flwr run does: space-separated key=value pairs (TOML values) "
                        "or a FILE.toml; over the scenario's flower.run_config, itself over the app's")  # fmt: skip
    flower.add_argument("--server-app", metavar="MODULE:ATTR", help="the ServerApp (default: flower.server_app)")
    flower.add_argument("--client-app", metavar="MODULE:ATTR", help="the ClientApp (default: flower.client_app)")
    flower.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a scenario key, e.g. --set flower.run_config.num-server-rounds=5")  # fmt: skip
    flower.add_argument("--out", type=Path, help="write the run into this directory (must be new or empty)")
    flower.add_argument("--seed", type=int, help="same as --set seed=N")
    flower.add_argument("--quiet", action="store_true", help="no progress bar")
    flower.add_argument("--resume", type=Path, metavar="RUN_DIR",
                        help="continue a K-async Flower run from its last checkpoint, as configured")  # fmt: skip


def flower_command(args: argparse.Namespace) -> int:
    if args.resume is not None:
        return _resume(args)
    if args.first is None:
        raise ConfigError("flower: no scenario; allowed: APP_DIR SCENARIO.yaml, SCENARIO.yaml, or --resume RUN_DIR")
    app_dir, scenario_path = _app_dir_and_scenario(args.first, args.scenario)
    overrides = list(args.overrides) + ([f"seed={args.seed}"] if args.seed is not None else [])
    _refuse_study(scenario_path, overrides)
    scenario = load_scenario(scenario_path, overrides)
    run_config = _parsed_run_config(args.run_config) if args.run_config else None
    if app_dir is None and run_config is not None:  # over the scenario's here; with an app folder, fused later
        run_config = {**(scenario.flower.run_config if scenario.flower else {}), **run_config}
    return run_flower_scenario(
        scenario, args.out, args.quiet, args.server_app, args.client_app, run_config=run_config, app_dir=app_dir
    )


def _resume(args: argparse.Namespace) -> int:
    """``flower [APP_DIR] --resume RUN_DIR``: the run as it was configured (only the ClientApp may be named again)."""
    given = [flag for flag, value in (("SCENARIO.yaml", args.scenario), ("--set", args.overrides),
             ("--seed", args.seed), ("--out", args.out), ("--run-config", args.run_config),
             ("--server-app", args.server_app)) if value]  # fmt: skip
    if args.first is not None and not args.first.is_dir():
        given.insert(0, f"{args.first} (not an app folder)")
    if given:
        raise ConfigError(
            f"--resume {args.resume}: a run resumes as it was configured; given: {', '.join(given)}; allowed: "
            "[APP_DIR] --resume RUN_DIR [--client-app MODULE:ATTR] [--quiet]"
        )
    from asyncfl.flower.apps import require_flwr

    require_flwr()
    from asyncfl.cli.run import announce_run_dir, report_finished, report_interrupted, resume_command
    from asyncfl.flower.resume import resume_flower  # built on flwr: imported once it is known to be there
    from asyncfl.runner.loop_guards import RunInterrupted

    where = "--client-app" if args.client_app is not None else "flower.client_app"
    try:
        run_dir = resume_flower(
            args.resume, args.client_app, app_dir=args.first, quiet=args.quiet, announce=announce_run_dir, where=where
        )
    except RunInterrupted as exc:  # Ctrl-C: the command that continues it
        words = ["flower", *([str(args.first)] if args.first else [])]
        return report_interrupted(exc.run_dir, resume_command(exc.run_dir, *words))
    return report_finished(run_dir)


def _app_dir_and_scenario(first: Path, second: Path | None) -> tuple[Path | None, Path]:
    """(APP_DIR, SCENARIO) of ``flower APP_DIR SCENARIO.yaml``, or (None, SCENARIO) of ``flower SCENARIO.yaml``."""
    forms = "allowed: APP_DIR SCENARIO.yaml (a Flower app folder, then the scenario) or SCENARIO.yaml alone"
    if second is None:
        if first.is_dir():
            raise ConfigError(f"{first}: an app folder, but no scenario follows it; {forms}")
        return None, first
    if not first.is_dir():
        what = "a file, not a folder" if first.exists() else "no such folder"
        raise ConfigError(f"{first}: {what}, yet a second argument ({second}) follows it; {forms}")
    return first, second


def _parsed_run_config(items: list[str]) -> dict:
    """``--run-config`` items, parsed by flwr's own parser (:func:`asyncfl.flower.app_folder.parse_run_config`)."""
    from asyncfl.flower.apps import require_flwr

    require_flwr()  # flwr parses them: a missing extra is one line with the install command
    from asyncfl.flower.app_folder import parse_run_config  # built on flwr: imported once it is known to be there

    return parse_run_config(items)


def _refuse_study(path: Path, overrides: list[str]) -> None:
    """A study file runs as a sweep (``python -m asyncfl FILE``, each variant's Flower apps named by its
    ``flower:`` section), not through this command, which runs one scenario."""
    raw = read_scenario(path)
    for item in overrides:
        apply_override(raw, item)
    if is_study(raw):
        command = shlex.join(["python", "-m", "asyncfl", str(path), *[f"--set={item}" for item in overrides]])
        raise ConfigError(
            f"{path}: this is a study (compare: / seeds:); the flower command runs one scenario. Run the study "
            f"with: {command} (its variants run the apps their flower: section names; "
            "--server-app / --client-app do not apply)"
        )
