"""Command-line glue for ``traces convert`` (asyncfl.traces)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from asyncfl.errors import ConfigError
from asyncfl.traces.convert import FORMATS, convert, write_converted  # every parser lists FORMATS


def add_traces_parser(sub) -> None:
    traces = sub.add_parser("traces", help="convert published device traces (FedScale, FLASH) to asyncfl's CSV files")
    actions = traces.add_subparsers(dest="traces_command", required=True)
    convert = actions.add_parser(
        "convert",
        help="write a device trace (fedscale-capacity) or an availability trace (fedscale-behavior, flash)",
        description="Write a device trace (fedscale-capacity) or an availability trace (fedscale-behavior, flash). "
        "FedScale's files are Python pickles, and reading a pickle can run code its author put in it: convert "
        "only files from a source you trust. asyncfl reads them with a restricted unpickler that accepts only "
        "plain data (dicts, lists, numbers, strings) and refuses (exit 2) a file naming anything else.",
    )
    convert.add_argument("input", type=Path, metavar="IN",
                         help="trace file (fedscale-*: a pickle, read as plain data only; flash: JSON)")  # fmt: skip
    convert.add_argument("--from", dest="fmt", required=True, choices=FORMATS, help="format of IN")
    convert.add_argument("--out", type=Path, required=True, metavar="OUT.csv",
                         help="trace CSV to write (client-to-entry mapping: OUT.mapping.csv)")  # fmt: skip
    convert.add_argument("--clients", type=int, metavar="N",
                         help="clients of the scenario: N entries drawn by --seed (with replacement when the trace "
                              "has fewer); default: every usable entry once, in key order")  # fmt: skip
    convert.add_argument("--seed", type=int, default=0, help="seed of the draw with --clients (default 0)")
    convert.add_argument("--horizon", type=float, default=7 * 86400.0, metavar="S",
                         help="availability traces: virtual seconds to cover (default 604800, one week)")  # fmt: skip
    convert.add_argument("--augmentation", type=float, default=3.0,
                         help="fedscale-capacity: training time per sample = augmentation x 'computation' "
                              "(FedScale's default 3)")  # fmt: skip
    convert.add_argument("--kbit", type=int, default=1024, metavar="BITS",
                         help="fedscale-capacity: bits in one kbit of 'communication': 1024 (FedScale's own model-size "
                              "arithmetic, default) or 1000 (SI)")  # fmt: skip
    convert.add_argument("--latency", type=float, default=0.0, metavar="S",
                         help="fedscale-capacity: latency_s of every client (default 0)")  # fmt: skip


def traces_command(args: argparse.Namespace) -> int:
    if args.clients is not None and args.clients < 1:
        raise ConfigError(f"--clients {args.clients}: must be an integer >= 1.")
    if not (math.isfinite(args.horizon) and args.horizon > 0):
        raise ConfigError(f"--horizon {args.horizon:g}: must be a positive number of seconds.")
    if not (math.isfinite(args.augmentation) and args.augmentation > 0):
        raise ConfigError(f"--augmentation {args.augmentation:g}: must be a positive number.")
    if args.kbit not in (1000, 1024):
        raise ConfigError(f"--kbit {args.kbit}: allowed: 1000, 1024.")
    if not (math.isfinite(args.latency) and args.latency >= 0):
        raise ConfigError(f"--latency {args.latency:g}: must be a number >= 0.")
    result = convert(
        args.fmt, args.input, clients=args.clients, seed=args.seed, horizon_s=args.horizon,
        augmentation=args.augmentation, kbit_bits=float(args.kbit), latency_s=args.latency,
    )  # fmt: skip
    written = write_converted(result, args.out)
    clients = len(result.mapping)
    distinct = len({key for _, key in result.mapping})
    print(
        f"{args.input}: {result.entries} usable {args.fmt} entries ({len(result.skipped)} skipped) -> "
        f"{clients} clients using {distinct} distinct entries",
        file=sys.stderr,
    )
    for key, why in list(result.skipped.items())[:5]:
        print(f"  skipped {key}: {why}", file=sys.stderr)
    if len(result.skipped) > 5:
        print(f"  ... and {len(result.skipped) - 5} more", file=sys.stderr)
    for path in written:
        print(path)
    return 0
