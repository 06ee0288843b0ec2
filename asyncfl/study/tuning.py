"""Fair tuning in a study: the ``tune:`` block picks, per variant, the grid point that is best on
tuning seeds disjoint from the evaluation seeds, and the evaluation runs use it::

    tune:
      grid: {training.lr: [0.03, 0.1, 0.3], algorithm.server_lr: [0.5, 1.0]}
      seeds: [100, 101]            # never one of seeds: (the evaluation seeds)
      criterion: final_accuracy    # or last_quarter_accuracy, or time_to_target (the first of targets:)
      variants: [fedavg, fedbuff]  # optional; default every variant

A grid key must lie in a section that changes what a run learns or the world it runs in
(:data:`TUNABLE`); the others are refused with the reason (:data:`UNTUNABLE`): a point must differ
from the next by a setting, not by its name, seed, outputs or measuring.

Every tuned variant runs every grid point x tuning seed (its own ``set`` applied, then the point:
each grid value replaces that key's value) into ``tuning/<variant>/<point id>/seed<k>/``.  The
point with the best mean criterion over the tuning seeds wins (highest accuracy; shortest time to
target, a run that never reaches it counting as +inf); ties go to the first point in grid order
(the grid is enumerated with the last key varying fastest).  ``tuning.csv`` lists every point's
per-seed and mean criterion, ``tuned.yaml`` the chosen values; the evaluation runs (variant x
``seeds:``) apply them on top of the variant's ``set``.  Nothing is read from an evaluation run, so
the evaluation seeds cannot influence the choice.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from pydantic import Field, ValidationError

from asyncfl.config import ConfigError, Scenario, validate_scenario
from asyncfl.config.problems import problems_message
from asyncfl.config.yaml_files import dotted_parent
from asyncfl.sections import Section

TUNING_DIR, TUNING_CSV, TUNED_FILE = "tuning", "tuning.csv", "tuned.yaml"
PATH_LINE = re.compile(r"^([A-Za-z_][\w]*(?:\[\d+\])*(?:\.[A-Za-z_][\w]*(?:\[\d+\])*)*): (.*)$")
Criterion = Literal["final_accuracy", "last_quarter_accuracy", "time_to_target"]

# the scenario's top-level keys a grid key may start with: what a run learns and the world it runs in
TUNABLE = ("algorithm", "clock", "data", "model", "population", "server", "training")
# the others, with why tuning them would make no sense (or an unfair choice)
UNTUNABLE = {
    "name": "it names the run directory",
    "seed": "tune.seeds and seeds: set it",
    "output": "it says what a run writes, not what it learns",
    "checkpoint": "it says when a run saves, not what it learns",
    "device": "it says where a run computes, not what it learns",
    "trainer": "it says how a run computes (the same results), not what it learns",
    "eval": "it changes how the criterion is measured, so the points would not be comparable",
    "stop": "it is the run's budget: the longest point would win by running longest; set it in the study",
    "timing_only": "a timing-only run learns nothing the criterion could measure",
}


class Tune(Section):
    """Per-variant tuning on seeds of its own (see :mod:`asyncfl.study.tuning`)."""

    grid: dict[str, list[Any]] = Field(
        min_length=1, description="dotted scenario key -> the values to try (e.g. training.lr: [0.03, 0.1, 0.3])"
    )
    seeds: list[int] = Field(min_length=1, description="tuning seeds; none may be an evaluation seed (seeds:)")
    criterion: Criterion = Field(
        "final_accuracy",
        description="what the best grid point maximises (accuracies) or minimises (time_to_target: the first "
        "of targets:, a run that never reaches it counting as +inf), averaged over the tuning seeds",
    )
    variants: list[str] | None = Field(None, description="the variants to tune (default: every variant)")


class TuneBlock(Section):
    """The study key ``tune:`` (validated on its own, so that problems are reported under ``tune.``)."""

    tune: Tune = Field(description="tune each variant's grid keys on tuning seeds before the evaluation runs")


@dataclass(frozen=True)
class TuningRun:
    """One tuned variant x grid point x tuning seed."""

    tuned: str  # the variant
    point: str  # the point id
    seed: int
    scenario: Scenario

    @property
    def variant(self) -> str:  # the label in the sweep's log lines
        return f"{TUNING_DIR}/{self.tuned}/{self.point}"

    @property
    def rel_dir(self) -> Path:
        return Path(TUNING_DIR) / self.tuned / self.point / f"seed{self.seed}"


@dataclass(frozen=True)
class TuningPlan:
    spec: Tune
    target: float | None  # time_to_target's target
    points: tuple[dict[str, Any], ...]  # grid order
    ids: tuple[str, ...]
    variants: tuple[str, ...]
    untuned: tuple[str, ...]  # the study's other variants, run with their own values
    merged: Mapping[str, dict[str, Any]]  # variant -> base with the variant's set applied
    runs: tuple[TuningRun, ...]


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination, in grid order: the last key varies fastest."""
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def point_id(point: Mapping[str, Any]) -> str:
    """``lr0.1_server_lr1``: each key's last part (the whole key, dots as '-', where two share it) and value."""
    lasts = [key.split(".")[-1] for key in point]
    parts = []
    for key, last in zip(point, lasts):
        name = last if lasts.count(last) == 1 else key.replace(".", "-")
        parts.append(name + value_text(point[key]))
    return "_".join(parts)


def value_text(value: Any) -> str:
    """A grid value as it appears in a directory name: a float in its short form (``1e-05``, ``1e06``,
    ``1`` for 1.0) where that form reads back as the same float, else in full (``0.1000000001``: Python's shortest
    text that reads back exactly), so distinct floats get distinct names; any character other than a
    letter, digit, '_', '.' or '-' becomes '-'."""
    if isinstance(value, float):
        short = f"{value:g}"
        text = (short if float(short) == value else repr(value)).replace("e+", "e")  # 1e+06 -> 1e06, not 1e-06
    else:
        text = str(value)
    return re.sub(r"[^A-Za-z0-9_.-]", "-", text)


def id_collision(grid: Mapping[str, Sequence[Any]]) -> str | None:
    """Why two values of one grid key would name the same directory (1 and 1.0; 'a/b' and 'a-b'), or None."""
    for key, values in grid.items():
        named: dict[str, Any] = {}
        for value in values:
            text = value_text(value)
            if text in named:
                first = named[text]
                why = (
                    "they are equal" if first == value else
                    "a directory name keeps only letters, digits, '_', '.' and '-' (any other character becomes "
                    "'-')"
                )  # fmt: skip
                return (
                    f"tune.grid.{key}: the values {first!r} and {value!r} both name the grid point's directory "
                    f"{text!r}, because {why}; list each value once, or give values that differ in the name."
                )
            named[text] = value
    return None


def untunable_problem(key: str) -> str:
    """The refusal of a grid key outside :data:`TUNABLE`."""
    head = key.split(".")[0]
    reason = UNTUNABLE.get(head, "it is not among the sections a grid may tune")
    return f"tune.grid.{key}: {head} cannot be tuned ({reason}); tunable sections: {', '.join(TUNABLE)}."


def apply_point(raw: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with each grid key's value replaced by the point's."""
    out = copy.deepcopy(dict(raw))
    for key, value in point.items():
        parts = key.split(".")
        dotted_parent(out, parts, f"tune.grid.{key}")[parts[-1]] = copy.deepcopy(value)
    return out


def parse_tune(
    value: Any,
    variants: Mapping[str, tuple[dict[str, Any], set[str]]],
    seeds: Sequence[int],
    targets: Sequence[float],
    problems: list[str],
) -> TuningPlan | None:
    """The ``tune:`` block checked against the study: ``variants`` maps each variant to its merged scenario
    and the dotted keys its ``set`` touched; ``seeds`` are the evaluation seeds."""
    if value is None:
        return None
    try:
        spec = TuneBlock.model_validate({"tune": value}).tune
    except ValidationError as exc:
        problems.extend(line.strip() for line in problems_message(exc, TuneBlock, "").splitlines()[1:])
        return None
    before = len(problems)
    if any(s < 0 for s in spec.seeds) or len(set(spec.seeds)) != len(spec.seeds):
        problems.append(f"tune.seeds: non-negative seeds, each once (got {spec.seeds}).")
    shared = sorted(set(spec.seeds) & set(seeds))
    if shared:
        problems.append(f"tune.seeds: {shared} are also evaluation seeds (seeds:); tuning seeds must be disjoint.")
    if spec.criterion == "time_to_target" and not targets:
        problems.append("tune.criterion: time_to_target needs targets: (the first target is used).")
    tuned = tuple(spec.variants if spec.variants is not None else variants)
    for name in tuned:
        if name not in variants:
            problems.append(f"tune.variants: {name!r} is not a variant; allowed: {', '.join(variants)}.")
    if "tuning" in variants:
        problems.append(f"compare: a variant named {TUNING_DIR!r} would share the tuning runs' directory.")
    for key, values in spec.grid.items():
        if not key or not all(key.split(".")) or not values:
            problems.append(f"tune.grid.{key}: expected a dotted key with a non-empty list of values.")
        elif key.split(".")[0] not in TUNABLE and key.split(".")[0] in Scenario.model_fields:
            problems.append(untunable_problem(key))  # (an unknown section is named by the validation below)
    for name in tuned:
        for key in spec.grid:
            hit = [t for t in variants.get(name, ({}, set()))[1] if _overlap(t, key)]
            if hit:
                problems.append(f"compare: variant {name!r} sets {hit[0]}, which tune.grid.{key} tunes; remove one.")
    if len(problems) > before:
        return None
    collision = id_collision(spec.grid)
    if collision:
        problems.append(collision)
        return None
    points = grid_points(spec.grid)
    ids = [point_id(p) for p in points]
    if len(set(ids)) != len(ids):  # two keys' names and values that run together alike
        problems.append(f"tune.grid: two grid points get the same directory name ({ids}); use distinct values.")
        return None
    runs, seen = [], set()
    for name in tuned:
        for point, pid in zip(points, ids):
            try:
                raw = apply_point(variants[name][0], point)
                runs.extend(TuningRun(name, pid, s, validate_scenario({**raw, "seed": s})) for s in spec.seeds)
            except ConfigError as exc:  # each problem once per variant, at the first point that has it
                for where, line in _locate(str(exc), spec.grid):
                    if (name, where, line) not in seen:
                        seen.add((name, where, line))
                        problems.append(f"{where} ({name}, {pid}): {line}")
    target = float(targets[0]) if targets else None
    merged = {name: variants[name][0] for name in tuned}
    untuned = tuple(name for name in variants if name not in tuned)
    return TuningPlan(spec, target, tuple(points), tuple(ids), tuned, untuned, merged, tuple(runs))


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _locate(message: str, grid: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, problem): a problem of a grid key is placed at ``tune.grid.<key>``, anything else at ``tune``."""
    lines = message.splitlines()[1:] or [message]
    out = []
    for line in (line.strip() for line in lines):
        match = PATH_LINE.match(line)
        path = re.sub(r"\[\d+\]", "", match.group(1)) if match else ""
        key = next((k for k in grid if _overlap(k, path)), None) if match else None
        out.append((f"tune.grid.{key}" if key else "tune", line))
    return out


def tuned_scenario(plan: TuningPlan, variant: str, seed: int, chosen: Mapping[str, dict[str, Any]]) -> Scenario:
    """An evaluation run of a tuned variant: its merged scenario with the chosen values."""
    return validate_scenario({**apply_point(plan.merged[variant], chosen[variant]), "seed": seed}, "<tuned>")
