"""``python -m asyncfl advise``: pick a sync deadline or a K-async K before training anything.

The scenario runs once per grid value in ``timing_only`` mode (the clock world alone: no model, no
training; a data set that needs no files is dealt, for each client's sample count) through the sweep's
job runner (:func:`asyncfl.sweep.jobs.run_locally`), each into an ordinary run directory.

Every setting runs for the same virtual time (the *horizon*: ``stop.virtual_time_s``, with
``stop.rounds`` lifted), because a fixed number of rounds lasts 42 virtual seconds with K = 1 and
thousands with K = 50, and a share like "never heard from" would then mostly measure the run's length.
The horizon is ``--horizon`` if given, else the scenario's own ``stop.virtual_time_s``, else the virtual
time the scenario's own setting needs for its ``stop.rounds`` (one more timing-only run, kept as
``scenario_setting/``).  The advice is then read from those files, never re-simulated:

``updates_per_hour``     aggregated updates (rows of updates.csv) per virtual hour (summary.json's
                         ``virtual_time_s``)
``mean_round_s``         mean of ``time - started`` over rounds.csv: a sync round's length (not
                         counting a last round cut short by the horizon), or in K-async the time
                         between two aggregations
``share_q1`` .. ``q4``   share of the aggregated updates sent by each speed quartile (clients.csv
                         ``samples_per_s``, ranked slowest first, ties by client id; 0.25 each = every
                         speed heard equally; q1 = the slowest quarter)
``staleness_*``          mean, median (p50), 90th percentile (p90, linear interpolation) and max of
                         updates.csv ``staleness``
``never_heard_share``    share of clients with no aggregated update (clients.csv ``participations`` = 0)

Outputs: ``advice.csv`` (those columns per setting, with each run's ``virtual_time_s`` and
``aggregations``), ``advice.md`` (the same as a Markdown table, saying what was held fixed) and
``advice.png`` (updates per hour, never-heard share, round length or staleness, and aggregations
against the grid value).
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asyncfl.config import ConfigError, apply_override, read_scenario, validate_scenario
from asyncfl.config.runnable import check_runnable
from asyncfl.output.reading import read_summary
from asyncfl.output.run_directory import new_run_dir, refuse_used_out
from asyncfl.study.advice_files import advice_row, write_advice
from asyncfl.study.spec import is_study
from asyncfl.sweep.jobs import Job, run_locally

MAX_SETTINGS = 200
REFERENCE = "scenario_setting"  # run directory of the scenario's own setting when it sets the horizon
OPTION = {"deadline_s": "--deadline value", "k": "--k", "concurrency": "--concurrency"}
# what every advice run sets: the clock world only, and no file the advice does not read
TIMING_KEYS = {
    "timing_only": True,
    "output.plot": False,
    "output.events": "none",
    "checkpoint.every_rounds": None,
    "checkpoint.every_virtual_s": None,
    "eval.per_client": False,
}


@dataclass(frozen=True)
class Setting:
    label: str  # run directory name, e.g. deadline_5 or k10_c20
    values: dict[str, Any]  # grid columns of advice.csv, e.g. {"deadline_s": 5.0}
    overrides: dict[str, Any]  # dotted scenario keys


# ------------------------------------------------------------------ the grid


def parse_deadlines(text: str) -> list[float]:
    """``start:stop:step`` (stop included when the steps land on it), e.g. 5:60:5."""
    allowed = "START:STOP:STEP with 0 < START <= STOP and STEP > 0, e.g. 5:60:5"
    parts = text.split(":")
    try:
        start, stop, step = (float(p) for p in parts) if len(parts) == 3 else (math.nan,) * 3
    except ValueError:
        start = stop = step = math.nan
    if not all(math.isfinite(x) for x in (start, stop, step)) or not (0 < start <= stop and step > 0):
        raise ConfigError(f"--deadline {text!r}: expected {allowed} (seconds).")
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > MAX_SETTINGS:
        raise ConfigError(f"--deadline {text!r}: {count} settings; at most {MAX_SETTINGS} (take a larger STEP).")
    return [_clean(start + i * step) for i in range(count)]


def parse_int_list(option: str, text: str) -> list[int]:
    """``1,5,10,20``: distinct integers >= 1."""
    items = [t.strip() for t in text.split(",")]
    if not items or any(not re.fullmatch(r"\d+", t) or int(t) < 1 for t in items):
        raise ConfigError(f"{option} {text!r}: expected a comma-separated list of integers >= 1, e.g. 1,5,10,20.")
    values = [int(t) for t in items]
    if len(set(values)) != len(values):
        raise ConfigError(f"{option} {text!r}: a value is repeated.")
    if len(values) > MAX_SETTINGS:
        raise ConfigError(f"{option} {text!r}: {len(values)} values; at most {MAX_SETTINGS}.")
    return values


def _clean(x: float) -> float:
    return float(f"{x:.10g}")


def _num(x: float) -> str:
    return f"{x:g}"


def grid(mode: str, deadline: str | None, k: str | None, concurrency: str | None) -> list[Setting]:
    """The settings to run, checked against the scenario's server mode."""
    if (deadline is None) == (k is None):
        raise ConfigError("advise: give exactly one of --deadline START:STOP:STEP (sync) or --k LIST (k_async).")
    if deadline is not None:
        if concurrency is not None:
            raise ConfigError("--concurrency: only with --k (k_async); a sync scenario has no concurrency.")
        if mode != "sync":
            raise ConfigError(f"--deadline: applies to sync scenarios; this one has server.mode {mode} (use --k).")
        return [
            Setting(f"deadline_{_num(d)}", {"deadline_s": d}, {"server.deadline_s": d})
            for d in parse_deadlines(deadline)
        ]
    if mode != "k_async":
        raise ConfigError(f"--k: applies to k_async scenarios; this one has server.mode {mode} (use --deadline).")
    ks = parse_int_list("--k", k)
    cs = parse_int_list("--concurrency", concurrency) if concurrency is not None else [None]
    if len(ks) * len(cs) > MAX_SETTINGS:
        raise ConfigError(f"--k x --concurrency: {len(ks) * len(cs)} settings; at most {MAX_SETTINGS}.")
    settings = []
    for c in cs:
        for kk in ks:
            if c is None:
                settings.append(Setting(f"k{kk}", {"k": kk}, {"server.k": kk}))
            else:
                settings.append(
                    Setting(f"k{kk}_c{c}", {"k": kk, "concurrency": c}, {"server.k": kk, "server.concurrency": c})
                )
    return settings


# ------------------------------------------------------------------ running


def _set(raw: dict, dotted: str, value: Any) -> None:
    apply_override(raw, f"{dotted}={json.dumps(value)}")


@dataclass(frozen=True)
class Plan:
    raw: dict  # the scenario file with --set applied
    base: Any  # the validated scenario as given (its own setting)
    settings: list[Setting]
    horizon_s: float | None  # None: measured by running the scenario's own setting
    horizon_from: str  # where the horizon comes from, for the output


def parse_horizon(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"--horizon {text!r}: expected a positive number of virtual seconds, e.g. 3600.")
    return value


def plan(
    path: Path, overrides: list[str], deadline: str | None, k: str | None, concurrency: str | None,
    horizon: str | None = None,
) -> Plan:  # fmt: skip
    """Read the scenario, check the grid and every setting's scenario (nothing is written yet)."""
    raw = read_scenario(path)
    for item in overrides:
        apply_override(raw, item)
    if is_study(raw):
        raise ConfigError(f"{path}: advise runs one scenario; this file is a study (compare: / seeds:).")
    base = validate_scenario(copy.deepcopy(raw), source=str(path))
    settings = grid(base.server.mode, deadline, k, concurrency)
    horizon_s, horizon_from = parse_horizon(horizon), "--horizon"
    if horizon_s is None and base.stop.virtual_time_s is not None:
        horizon_s, horizon_from = base.stop.virtual_time_s, "the scenario's stop.virtual_time_s"
    elif horizon_s is None:
        own = f"the scenario's own setting ({own_setting(base)})"
        horizon_from = f"the time {own} needs for its stop.rounds = {base.stop.rounds}"
    result = Plan(raw, base, settings, horizon_s, horizon_from)
    setting_scenarios(path, result, horizon_s or 1.0)  # every setting validates before anything is written
    return result


def round_up(seconds: float) -> float:
    """The next number of three significant digits strictly above ``seconds`` (549.65 -> 550, 550 -> 551).
    Strictly above: a K-async run stops at its time limit before an update arriving at that very instant,
    so a horizon equal to the reference's last aggregation would lose that aggregation."""
    step = 10.0 ** (math.floor(math.log10(seconds)) - 2)
    return _clean((math.floor(seconds / step + 1e-9) + 1) * step)


def own_setting(base: Any) -> str:
    server = base.server
    if server.mode == "sync":
        return f"deadline_s = {server.deadline_s:g}" if server.deadline_s is not None else "no deadline"
    return f"k = {server.k}, concurrency = {server.concurrency}"


def setting_scenarios(path: Path, plan: Plan, horizon_s: float) -> list[dict]:
    """Each setting's scenario (validated, as JSON data): timing-only, run for ``horizon_s`` virtual seconds."""
    stop = {"stop.rounds": None, "stop.virtual_time_s": horizon_s, "stop.target_accuracy": None}
    scenarios = []
    for setting in plan.settings:
        variant = copy.deepcopy(plan.raw)
        for key, value in {**TIMING_KEYS, **stop, **setting.overrides}.items():
            _set(variant, key, value)
        option = ", ".join(f"{OPTION[key]} {value:g}" for key, value in setting.values.items())
        scenario = validate_scenario(variant, source=f"{path} with {option}")
        if not scenarios:  # trace files and memory: the same for every setting (timing only, same population)
            check_runnable(scenario)
        scenarios.append(scenario.model_dump(mode="json"))
    return scenarios


def reference_scenario(path: Path, plan: Plan) -> dict:
    """The scenario's own setting as given (its stop.rounds), timing-only: its length is the horizon."""
    variant = copy.deepcopy(plan.raw)
    for key, value in TIMING_KEYS.items():
        _set(variant, key, value)
    return validate_scenario(variant, source=str(path)).model_dump(mode="json")


def run_advice(
    path: Path,
    overrides: list[str],
    deadline: str | None = None,
    k: str | None = None,
    concurrency: str | None = None,
    out: Path | None = None,
    quiet: bool = False,
    horizon: str | None = None,
) -> Path:
    """Run the grid over one common virtual horizon and write advice.csv / .md / .png into the output
    directory (returned)."""
    chosen = plan(path, overrides, deadline, k, concurrency, horizon)
    if out is not None:
        refuse_used_out(out)
        out.mkdir(parents=True, exist_ok=True)
    else:
        out = new_run_dir(Path(chosen.base.output.dir), f"{chosen.base.name}_advice")
    log = (lambda msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))

    def run(jobs: list[Job]) -> None:
        failures = run_locally(jobs, log)
        if failures:
            job, error = failures[0]
            raise ConfigError(f"advise: the run {job.variant} failed: {error}")

    horizon_s, horizon_from = chosen.horizon_s, chosen.horizon_from
    if horizon_s is None:
        log(f"advise {out}: the scenario's own setting first, to fix the virtual horizon")
        reference = reference_scenario(path, chosen)
        run([Job(REFERENCE, reference["seed"], reference, out / REFERENCE)])
        needed = float(read_summary(out / REFERENCE)["virtual_time_s"])
        if not needed > 0:
            raise ConfigError(
                f"advise: the scenario's own setting ended at virtual time 0, so it cannot fix the horizon; "
                f"give --horizon SECONDS ({out / REFERENCE})."
            )
        horizon_s = round_up(needed)
        horizon_from += f", {needed:,.6g} s, rounded up"
    scenarios = setting_scenarios(path, chosen, horizon_s)
    jobs = [Job(s.label, sc["seed"], sc, out / s.label) for s, sc in zip(chosen.settings, scenarios)]
    log(f"advise {out}: {len(jobs)} timing-only run(s) of {horizon_s:,.6g} virtual s each")
    run(jobs)
    rows = [advice_row(s.values, s.label, out / s.label, horizon_s) for s in chosen.settings]
    write_advice(out, rows, horizon_s, horizon_from)
    return out
