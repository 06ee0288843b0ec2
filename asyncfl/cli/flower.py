"""``flower SCENARIO.yaml --server-app pkg.module:app --client-app pkg.module:app``: a Flower ServerApp and ClientApp
on the scenario's virtual clock (:mod:`asyncfl.flower`); the flags override the scenario's ``flower:`` section."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from asyncfl.cli.run import run_flower_scenario
from asyncfl.config import ConfigError, apply_override, load_scenario, read_scenario
from asyncfl.study.spec import is_study


def add_flower_parser(sub) -> None:
    flower = sub.add_parser("flower", help="run a Flower ServerApp and ClientApp on the scenario's virtual clock")
    flower.add_argument("scenario", type=Path, help="scenario file (YAML): the population, clock, stop and output")
    flower.add_argument("--server-app", metavar="MODULE:ATTR", help="the ServerApp (default: flower.server_app)")
    flower.add_argument("--client-app", metavar="MODULE:ATTR", help="the ClientApp (default: flower.client_app)")
    flower.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a scenario key, e.g. --set flower.run_config.num-server-rounds=5")  # fmt: skip
    flower.add_argument("--out", type=Path, help="write the run into this directory (must be new or empty)")
    flower.add_argument("--seed", type=int, help="same as --set seed=N")
    flower.add_argument("--quiet", action="store_true", help="no progress bar")


def flower_command(args: argparse.Namespace) -> int:
    overrides = list(args.overrides) + ([f"seed={args.seed}"] if args.seed is not None else [])
    _refuse_study(args.scenario, overrides)
    scenario = load_scenario(args.scenario, overrides)
    return run_flower_scenario(scenario, args.out, args.quiet, args.server_app, args.client_app)


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
