"""The one load check of every script that writes a table into docs/ (issue 29, item 14): a table
measured on a busy machine (load 10-14 on 2 cores once made 10^6 clients take 305 s instead of 13 s)
must not be published as if it were quiet.

Before it measures anything, a script calls :func:`check_load`: the 1-minute load average of the
machine (its other processes: the script has not started yet) above :data:`LOAD_PER_CORE` per core
means busy, and the script stops with exit status 1 and one message, unless ``--force`` was given.
What it writes then carries :meth:`Load.note` (markdown) or :meth:`Load.fields` (CSV columns): the
load average, the cores, and whether the table was forced on a busy machine; the note also names the CPU.

    from benchmarks.tools.quiet_machine import add_force_argument, check_load
    add_force_argument(parser)
    load = check_load(args.force, "docs/results/population.md")
    ...
    RESULT.write_text(table + load.note())
"""

from __future__ import annotations

import argparse
import os
import platform
from dataclasses import dataclass, replace
from typing import Callable

from asyncfl.runner.parts import machine_description

LOAD_PER_CORE = 0.5  # 1-minute load average per core above which the machine is busy


def processor() -> str:
    """The CPU's name, as every run's summary.json records it."""
    return machine_description()["cpu"]


def device_description(device, cuda_note: str = "") -> str:
    """The device a benchmark measured on (the GPU's name, or the CPU's), torch's and Python's versions;
    ``cuda_note``: added inside the GPU's parentheses (e.g. its float32 mode)."""
    import torch

    if device.type == "cuda":
        where = f"{torch.cuda.get_device_name(device)} (cuda{cuda_note})"
    else:
        where = f"{processor() or platform.processor() or 'CPU'} (cpu)"
    return f"{where}, torch {torch.__version__}, Python {platform.python_version()}"


def cores() -> int:
    """The cores this process may run on (its affinity), as the load is shared among them."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Load:
    one_minute: float
    five_minutes: float
    cores: int
    forced: bool  # written with --force on a busy machine
    cpu: str = ""  # the processor: another CPU gives other timings (and may round differently)

    @property
    def busy(self) -> bool:
        return self.one_minute > LOAD_PER_CORE * self.cores

    def reading(self) -> str:
        return (
            f"load average {self.one_minute:.2f} (1 min), {self.five_minutes:.2f} (5 min) on {self.cores} cores "
            f"({self.one_minute / self.cores:.2f} per core) before measuring"
        )

    def summary(self) -> str:
        if self.forced:
            return (
                f"FORCED on a busy machine (--force): {self.reading()}, above the {LOAD_PER_CORE} per core a table "
                "needs; its timings are not comparable with a quiet machine's"
            )
        return f"{self.reading()}: quiet (at most {LOAD_PER_CORE} per core)"

    def note(self) -> str:
        """A paragraph to end a markdown table with (a blank line first): the load and, where known, the CPU."""
        return f"\nMachine: {self.summary()}." + (f" CPU: {self.cpu}." if self.cpu else "") + "\n"

    def fields(self) -> dict[str, str]:
        """The same as CSV columns, for tables that are CSV files."""
        return {"load_1min": f"{self.one_minute:.2f}", "cores": str(self.cores), "forced": str(self.forced).lower()}


def add_force_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"write the table into docs/ even when the machine is busy (1-minute load average above "
        f"{LOAD_PER_CORE} per core); the table then says so",
    )


def check_load(
    force: bool,
    writes: str,
    loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg,
    core_count: Callable[[], int] = cores,
    cpu_name: Callable[[], str] = processor,
) -> Load:
    """The machine's load now; a busy machine stops the script (SystemExit, status 1, one message
    naming what it would have written) unless ``force``."""
    one, five, _ = loadavg()
    load = Load(one, five, core_count(), forced=False, cpu=cpu_name())
    if not load.busy:
        return load
    if not force:
        raise SystemExit(
            f"error: the machine is busy ({load.reading()}, above {LOAD_PER_CORE} per core): refusing to measure "
            f"for {writes}, whose numbers would not be those of a quiet machine. Wait until it is quiet "
            f"(`cat /proc/loadavg`), or give --force to write it anyway, marked as forced."
        )
    return replace(load, forced=True)
