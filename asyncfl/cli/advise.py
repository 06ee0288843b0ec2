"""Command-line glue for ``advise`` (asyncfl.sweep.advise)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_advise_parser(sub) -> None:
    advise = sub.add_parser(
        "advise",
        help="timing-only runs over a grid of deadlines (sync) or K (k_async), each for the same virtual time: "
        "updates per hour, round time, participation by speed quartile, staleness, clients never heard from",
    )
    advise.add_argument("scenario", type=Path, help="scenario file (YAML)")
    advise.add_argument("--deadline", metavar="START:STOP:STEP", help="sync: deadlines to try, e.g. 5:60:5")
    advise.add_argument("--k", metavar="K,K,...", help="k_async: K values to try, e.g. 1,5,10,20")
    advise.add_argument("--concurrency", metavar="C,C,...", help="k_async: concurrencies to try with each K")
    advise.add_argument("--horizon", metavar="S",
                        help="virtual seconds every setting runs for (default: the scenario's stop.virtual_time_s, "
                             "else the virtual time its own setting needs for its stop.rounds)")  # fmt: skip
    advise.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a scenario key (repeatable), e.g. --set stop.virtual_time_s=3600")  # fmt: skip
    advise.add_argument("--seed", type=int, help="same as --set seed=N")
    advise.add_argument("--out", type=Path, help="output directory (new or empty; default "
                        "<output.dir>/<name>_advice/<timestamp>)")  # fmt: skip
    advise.add_argument("--quiet", action="store_true", help="no progress lines")


def advise_command(args: argparse.Namespace) -> int:
    from asyncfl.sweep.advise import run_advice

    overrides = list(args.overrides) + ([f"seed={args.seed}"] if args.seed is not None else [])
    out = run_advice(
        args.scenario, overrides, args.deadline, args.k, args.concurrency, args.out, args.quiet, args.horizon
    )
    print((out / "advice.md").read_text(encoding="utf-8"), end="")
    print(out)
    return 0
