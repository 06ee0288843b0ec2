"""``flower SCENARIO.yaml --server-app pkg.module:app --client-app pkg.module:app``: a Flower ServerApp and ClientApp
on the scenario's virtual clock (:mod:`asyncfl.flower`); the flags override the scenario's ``flower:`` section."""

from __future__ import annotations

import argparse
from pathlib import Path

from asyncfl.cli.run import run_flower_scenario
from asyncfl.config import load_scenario


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
    scenario = load_scenario(args.scenario, overrides)
    return run_flower_scenario(scenario, args.out, args.quiet, args.server_app, args.client_app)
