"""Fair tuning in a study: the ``tune:`` block picks, per variant, the grid point that is best on
tuning seeds disjoint from the evaluation seeds, and the evaluation runs use it::

    tune:
      grid: {training.lr: [0.03, 0.1, 0.3], algorithm.server_lr: [0.5, 1.0]}
      seeds: [100, 101, 102, 103]  # never one of seeds: (the evaluation seeds); default: default_seeds()
      criterion: final_accuracy    # default: each variant on the measure its claims test; see below
      rule: mean                   # or mean_minus_se, worst (asyncfl.study.tuning_results)
      variants: [fedavg, fedbuff]  # optional; default every variant
      widen: true                  # the default: a choice at a numeric grid edge adds a point beyond it
      divergence_margin: 1         # the default: never choose a point next to one where a tuning run diverged
      collapse_accuracy: null      # 0.15: with the margin, a run ending at most this accurate failed too

Left out, ``tune.seeds`` is :data:`DEFAULT_SEEDS` seeds disjoint from the evaluation seeds
(:func:`default_seeds`: the first integers from :data:`FIRST_DEFAULT_SEED` on that are not evaluation seeds):
two seeds picked cliffs before.  Fewer, set by hand, are allowed and warned of in the report.

A grid key must lie in a section that changes what a run learns or the world it runs in
(:data:`TUNABLE`); the others are refused with the reason (:data:`UNTUNABLE`): a point must differ
from the next by a setting, not by its name, seed, outputs or measuring.

Every tuned variant runs every grid point x tuning seed (its own ``set`` applied, then the point:
each grid value replaces that key's value) into ``tuning/<variant>/<point id>/seed<k>/``.  The
point with the best score (``rule:``, by default the mean criterion) over the tuning seeds wins
(highest accuracy; shortest time to target, a run that never reaches it counting as +inf); ties go to
the first point in grid order (the grid is enumerated with the last key varying fastest).
``tuning.csv`` lists every point's per-seed and mean criterion, ``tuned.yaml`` the chosen values; the
evaluation runs (variant x ``seeds:``) apply them on top of the variant's ``set``.  Nothing is read from
an evaluation run, so the evaluation seeds cannot influence the choice.

``criterion:`` left out: each tuned variant on the measures its claims test (as ``claimed``), a variant no
claim names on ``final_accuracy`` (a study without claims tunes as before).  A variant whose claims test
several (in the order they first appear: M1, M2, ...) is tuned on each from the same tuning runs
(:attr:`TuningPlan.also`); its evaluation runs carry the point chosen on M1, and where Mi chooses another
point the variant's runs with that one are made under :func:`set_name` (``fl_fdms~time_to_0.401``), which the
claims on Mi read for their variant and versus alike (:func:`asyncfl.study.tuned_sets.claims_on_tuned_sets`);
where Mi chooses the same point, its claims read the M1 runs.  Otherwise it is one measure for every tuned
variant: ``final_accuracy``, ``last_quarter_accuracy``, ``best_accuracy``, ``time_to_target`` (the first
target, a miss +inf), or any claim measure (``last_quarter:<column>``, ``time_to:<target>``: a miss censored
at the run's end, as in the claims); ``claimed``: each variant on the measures its claims test, as left out
(a variant they do not name is refused); or a mapping variant -> measure (a tuned variant it leaves out:
``final_accuracy``; ``claimed`` in it is refused for a variant claimed on several measures; in it or with
``claimed``, ``time_to_target`` means ``time_to:<the first target>``).

``algorithm.<key>`` grid keys (``algorithm.history`` for FedHist) apply to the variants whose algorithm has
the key and whose own ``set`` does not fix it (a variant of an h sweep keeps its h); another variant is tuned on
the rest of the grid (the key is listed as skipped in tuning.csv,
tuned.yaml and the report), and a variant with no grid key left is not tuned.  A key that no tuned
variant's algorithm has is refused.

``widen: true`` (the default; ``widen: false`` only warns): where a chosen numeric value (on any measure the
variant is tuned on: a point beyond is run once, for all) sits at its grid's edge, one point beyond that edge
(the chosen point with that value moved one step further: geometric where the grid's values are positive with
a near-constant ratio, which a two-value positive grid always has; arithmetic otherwise: :func:`next_value`)
runs on the tuning seeds, and the choice is made again, up to ``widen_max`` times (:func:`widen`); the report
lists every widening.

``divergence_margin: m`` (default 1; ``divergence_margin: 0`` turns it off): a point is not chosen when a tuning
run diverged (summary status
``diverged``) at a point at most ``m`` steps from it along one grid key (the others equal; steps over that
key's values sorted, widened ones included), itself included.  Four tuning seeds cannot see a divergence
that strikes one run in ten (unseen with probability 0.9^4 = 0.66), so the best-scoring point right below a
step where some seeds diverge is the likeliest to diverge on evaluation seeds; the margin keeps that step
away.  Where every point is that close, the choice is made as without the margin (tuned.yaml says so).

``collapse_accuracy: a`` (with the margin; default null): a tuning run whose final accuracy is at most ``a``
failed too.  A model can collapse to predicting one class (about 0.1 on ten classes) with finite parameters,
so that its status stays ``finished`` and the margin alone does not see it: FedAU K -> infinity at eta_g 7 and
local lr 0.2 (fedau_mnist1d_bernoulli's tuning) ended at 0.12 with status finished on 3 of its 4 seeds.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from pydantic import Field, ValidationError, model_validator

from asyncfl.config import ConfigError, Scenario, validate_scenario
from asyncfl.config.problems import problems_message
from asyncfl.config.yaml_files import dotted_parent
from asyncfl.sections import Section
from asyncfl.study.claims import TIME_TO, TUNED_ON, Claim
from asyncfl.study.measures import ACCURACY_MEASURES, allowed_columns, column_of

TUNING_DIR, TUNING_CSV, TUNED_FILE = "tuning", "tuning.csv", "tuned.yaml"
# tune.seeds left out: this many seeds, the first from FIRST_DEFAULT_SEED on that are not evaluation seeds
# (a fixed start, so that adding evaluation seeds below it leaves finished tuning runs valid)
DEFAULT_SEEDS, FIRST_DEFAULT_SEED = 4, 100
PATH_LINE = re.compile(r"^([A-Za-z_][\w]*(?:\[\d+\])*(?:\.[A-Za-z_][\w]*(?:\[\d+\])*)*): (.*)$")
# the single criteria tuned as before any claim measure could be named (tuned.yaml's criterion, no measures:)
CRITERIA = (*ACCURACY_MEASURES, "time_to_target")
CLAIMED = "claimed"
Rule = Literal["mean", "mean_minus_se", "worst"]

# the scenario's top-level keys a grid key may start with: what a run learns and the world it runs in
TUNABLE = ("algorithm", "clock", "data", "flower", "model", "population", "server", "training")
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
    seeds: list[int] | None = Field(
        None,
        min_length=1,
        description=f"tuning seeds; none may be an evaluation seed (seeds:); default: the first {DEFAULT_SEEDS} "
        f"integers from {FIRST_DEFAULT_SEED} on that are not evaluation seeds (fewer are warned of in the report)",
    )
    criterion: str | dict[str, str] | None = Field(
        None,
        description="what the best grid point maximises (accuracies) or minimises (times); default: each variant "
        "on each measure its claims test (final_accuracy where none names it): final_accuracy, "
        "last_quarter_accuracy, best_accuracy, time_to_target (the first of targets:, a miss +inf), a claim "
        "measure (last_quarter:<column>, time_to:<target>, a miss censored at the run's end), claimed (each "
        "variant on each measure its claims test), or a mapping variant -> measure",
    )
    rule: Rule = Field(
        "mean", description="how a point's per-seed criterion becomes its score: mean, mean_minus_se, worst"
    )
    variants: list[str] | None = Field(None, description="the variants to tune (default: every variant)")
    widen: bool = Field(True, description="a chosen numeric value at its grid's edge adds a point beyond it")
    widen_max: int = Field(2, ge=1, description="with widen: the most times a variant's grid is widened")
    divergence_margin: int = Field(
        1,
        ge=0,
        description="grid steps (along one key) kept between the chosen point and any point where a tuning run "
        "diverged; 0: off",
    )
    collapse_accuracy: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="with divergence_margin: a tuning run whose final accuracy is at most this failed too (a "
        "model collapsed to chance with finite parameters, e.g. 0.15 for 10 classes); null: status diverged only",
    )

    @model_validator(mode="after")
    def _collapse_needs_margin(self) -> Tune:
        if self.collapse_accuracy is not None and not self.divergence_margin:
            raise ConfigError(
                "collapse_accuracy: counts a collapsed run for divergence_margin, which is 0 (off); set "
                "divergence_margin: 1 (or more), or remove collapse_accuracy"
            )
        return self


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
class Widening:
    """One point added beyond a grid edge (:func:`widen`)."""

    variant: str
    key: str
    edge: Any  # the chosen value at the edge
    value: Any  # the value beyond it
    round: int  # 1 for the first widening
    point: str  # the added point's id


@dataclass(frozen=True)
class TuningPlan:
    spec: Tune
    target: float | None  # time_to_target's target
    points: tuple[dict[str, Any], ...]  # the whole grid, in grid order
    ids: tuple[str, ...]
    variants: tuple[str, ...]
    untuned: tuple[str, ...]  # the study's other variants, run with their own values
    merged: Mapping[str, dict[str, Any]]  # variant -> base with the variant's set applied
    runs: tuple[TuningRun, ...]
    measures: Mapping[str, str] = field(default_factory=dict)  # variant -> claim measure, if not spec.criterion
    skipped: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # variant -> grid keys its algorithm lacks
    variant_points: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)  # if not ``points``
    widened: tuple[Widening, ...] = ()
    also: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # variant -> its claims' further measures

    def measures_of(self, variant: str) -> tuple[str | None, ...]:
        """The measures ``variant`` is tuned on: its first (None: the plan's criterion), then :attr:`also`."""
        return (self.measures.get(variant), *self.also.get(variant, ()))

    def points_of(self, variant: str) -> tuple[dict[str, Any], ...]:
        """The points ``variant`` is tuned on: the grid without its skipped keys, then any widened points."""
        return self.variant_points.get(variant, self.points)

    def ids_of(self, variant: str) -> tuple[str, ...]:
        return self.ids if variant not in self.variant_points else tuple(map(point_id, self.variant_points[variant]))


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
    claims: Sequence[Claim] = (),
    columns: Mapping[str, Sequence[str]] | None = None,
) -> TuningPlan | None:
    """The ``tune:`` block checked against the study: ``variants`` maps each variant to its merged scenario
    and the dotted keys its ``set`` touched; ``seeds`` are the evaluation seeds; ``claims`` (variant names
    as expanded) decide ``criterion: claimed``; ``columns``: the metrics.csv columns each variant writes."""
    if value is None:
        return None
    try:
        spec = TuneBlock.model_validate({"tune": value}).tune
    except ValidationError as exc:
        problems.extend(line.strip() for line in problems_message(exc, TuneBlock, "").splitlines()[1:])
        return None
    if spec.seeds is None:
        spec = spec.model_copy(update={"seeds": default_seeds(seeds)})
    before = len(problems)
    if any(s < 0 for s in spec.seeds) or len(set(spec.seeds)) != len(spec.seeds):
        problems.append(f"tune.seeds: non-negative seeds, each once (got {spec.seeds}).")
    shared = sorted(set(spec.seeds) & set(seeds))
    if shared:
        problems.append(f"tune.seeds: {shared} are also evaluation seeds (seeds:); tuning seeds must be disjoint.")
    tuned = tuple(spec.variants if spec.variants is not None else variants)
    for name in tuned:
        if name not in variants:
            problems.append(f"tune.variants: {name!r} is not a variant; allowed: {', '.join(variants)}.")
    if "tuning" in variants:
        problems.append(f"compare: a variant named {TUNING_DIR!r} would share the tuning runs' directory.")
    each = {name: tuple(found[1:]) for name in tuned if len(found := claimed_measures(name, claims)) > 1}
    if spec.criterion is None:  # left out: each variant on what its claims test
        spec = spec.model_copy(update={"criterion": _claimed_default(tuned, claims)})
    elif spec.criterion != CLAIMED:  # a measure for all, or a mapping: one measure per variant, as given
        each = {}
    measures = _measures(spec.criterion, tuned, targets, claims, columns or {}, problems)
    for key, values in spec.grid.items():
        if not key or not all(key.split(".")) or not values:
            problems.append(f"tune.grid.{key}: expected a dotted key with a non-empty list of values.")
        elif key.split(".")[0] not in TUNABLE and key.split(".")[0] in Scenario.model_fields:
            problems.append(untunable_problem(key))  # (an unknown section is named by the validation below)
    fixed: dict[str, tuple[str, ...]] = {}  # variant -> the algorithm.<key> grid keys its set fixes
    for name in tuned:
        for key in spec.grid:
            hit = [t for t in variants.get(name, ({}, set()))[1] if _overlap(t, key)]
            if hit and key.startswith("algorithm.") and hit == [key]:  # e.g. an h sweep's window: kept, not tuned
                fixed[name] = fixed.get(name, ()) + (key,)
            elif hit:
                problems.append(f"compare: variant {name!r} sets {hit[0]}, which tune.grid.{key} tunes; remove one.")
    if len(problems) > before:
        return None
    skipped = _skipped_algorithm_keys(spec.grid, {name: variants[name][0] for name in tuned}, problems)
    for name, keys in fixed.items():
        skipped[name] = tuple(dict.fromkeys(skipped.get(name, ()) + keys))
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
    own_points = {
        name: tuple(grid_points({k: v for k, v in spec.grid.items() if k not in skipped[name]}))
        for name in tuned if skipped.get(name) and len(skipped[name]) < len(spec.grid)
    }  # fmt: skip
    tuned = tuple(name for name in tuned if len(skipped.get(name, ())) < len(spec.grid))  # a key left to tune
    runs, seen = [], set()
    for name in tuned:
        for point in own_points.get(name, points):
            pid = point_id(point)
            try:
                runs.extend(_runs(name, pid, variants[name][0], point, spec.seeds))
            except ConfigError as exc:  # each problem once per variant, at the first point that has it
                for where, line in _locate(str(exc), spec.grid):
                    if (name, where, line) not in seen:
                        seen.add((name, where, line))
                        problems.append(f"{where} ({name}, {pid}): {line}")
    target = float(targets[0]) if targets else None
    merged = {name: variants[name][0] for name in tuned}
    untuned = tuple(name for name in variants if name not in tuned)
    return TuningPlan(spec, target, tuple(points), tuple(ids), tuned, untuned, merged, tuple(runs),
                      {name: m for name, m in measures.items() if name in tuned}, skipped, own_points,
                      also={name: m for name, m in each.items() if name in tuned})  # fmt: skip


def default_seeds(evaluation: Sequence[int]) -> list[int]:
    """The tuning seeds of a ``tune:`` without ``seeds``: the first :data:`DEFAULT_SEEDS` integers from
    :data:`FIRST_DEFAULT_SEED` on that are not in ``evaluation`` (evaluation seeds 0-14: 100-103; 100-101: 102-105)."""
    taken, out = set(evaluation), []
    candidate = FIRST_DEFAULT_SEED
    while len(out) < DEFAULT_SEEDS:
        if candidate not in taken:
            out.append(candidate)
        candidate += 1
    return out


def _runs(name: str, pid: str, raw: Mapping[str, Any], point: Mapping[str, Any], seeds: Sequence[int]) -> list:
    raw = apply_point(raw, point)
    return [TuningRun(name, pid, s, validate_scenario({**raw, "seed": s})) for s in seeds]


def claimed_measures(variant: str, claims: Sequence[Claim]) -> list[str]:
    """The measures the claims about ``variant`` (as variant or versus) test, in the order they first appear."""
    return list(dict.fromkeys(c.measure for c in claims if variant in (c.variant, c.versus)))


def set_name(variant: str, measure: str) -> str:
    """The evaluation runs of ``variant`` tuned on ``measure`` where that choice differs from the one on its first
    measure: ``fl_fdms~time_to_0.401`` (':' becomes '_'; '~', which no variant name may hold, keeps it apart
    from the ``.<value>`` a sensitivity axis appends)."""
    return f"{variant}{TUNED_ON}{re.sub(r'[^A-Za-z0-9_.-]', '-', measure.replace(':', '_'))}"


def _claimed_default(tuned: Sequence[str], claims: Sequence[Claim]) -> str | dict[str, str]:
    """``tune.criterion`` left out: variant -> the first measure its claims test (a variant no claim names:
    final_accuracy; the others it is tuned on too: :attr:`TuningPlan.also`); plain final_accuracy when no claim
    names a tuned variant."""
    named = {name: claimed_measures(name, claims) for name in tuned}
    if not any(named.values()):
        return "final_accuracy"
    return {name: found[0] if found else "final_accuracy" for name, found in named.items()}


def _measures(
    criterion: str | dict[str, str],
    tuned: Sequence[str],
    targets: Sequence[float],
    claims: Sequence[Claim],
    columns: Mapping[str, Sequence[str]],
    problems: list[str],
) -> dict[str, str]:
    """Variant -> the claim measure it is tuned on; empty when one criterion of :data:`CRITERIA` serves all
    (tuned as before claim measures could be named)."""
    if isinstance(criterion, str) and criterion in CRITERIA:
        if criterion == "time_to_target" and not targets:
            problems.append("tune.criterion: time_to_target needs targets: (the first target is used).")
        return {}
    named = criterion if isinstance(criterion, dict) else {name: criterion for name in tuned}
    out = {}
    for name, measure in named.items():
        where = f"tune.criterion.{name}" if isinstance(criterion, dict) else "tune.criterion"
        if name not in tuned:
            problems.append(f"{where}: {name!r} is not a tuned variant; allowed: {', '.join(tuned)}.")
            continue
        if measure == CLAIMED:
            found = claimed_measures(name, claims)
            if len(found) > 1 and not isinstance(criterion, dict):  # tuned on each (TuningPlan.also)
                found = found[:1]
            if len(found) != 1:
                tested = f"test {', '.join(sorted(found))}" if found else "test no measure"
                problems.append(
                    f"{where}: claimed: the claims about {name!r} {tested}; name its measure instead "
                    f"(tune.criterion: {{{name}: <measure>}})."
                )
                continue
            measure = found[0]
        problem = measure_problem(measure, targets, columns.get(name))
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        if measure == "time_to_target":
            measure = f"{TIME_TO}{targets[0]:g}"
        out[name] = measure
    return {name: out.get(name, "final_accuracy") for name in tuned} if isinstance(criterion, dict) else out


def measure_problem(measure: Any, targets: Sequence[float], columns: Sequence[str] | None) -> str | None:
    """Why ``measure`` cannot be a tuning criterion, or None."""
    allowed = (
        f"allowed: {', '.join(CRITERIA)}, last_quarter:<column>, time_to:<target>, {CLAIMED}, or a mapping "
        f"variant -> one of these; got {measure!r}."
    )
    if not isinstance(measure, str):
        return allowed
    if measure in CRITERIA:
        return "time_to_target needs targets: (the first target is used)." if (
            measure == "time_to_target" and not targets) else None  # fmt: skip
    column = column_of(measure)
    if column:
        if columns is None or column in columns:
            return None
        return f"{measure!r}: the runs write no column {column} to metrics.csv; {allowed_columns(column, columns)}."
    if measure.startswith(TIME_TO):
        try:
            target = float(measure[len(TIME_TO) :])
        except ValueError:
            return allowed
        listed = ", ".join(f"{t:g}" for t in targets) or "none"
        return None if target in targets else f"{measure!r}: the target must be one of targets: ({listed})."
    return allowed


def _skipped_algorithm_keys(
    grid: Mapping[str, Any], merged: Mapping[str, dict[str, Any]], problems: list[str]
) -> dict[str, tuple[str, ...]]:
    """Variant -> the ``algorithm.<key>`` grid keys its algorithm has no setting for; a key that no tuned
    variant's algorithm has is a problem."""
    keys = [key for key in grid if key.startswith("algorithm.")]
    if not keys:
        return {}
    settings: dict[str, set[str] | None] = {}
    algorithms: dict[str, str] = {}
    for name, raw in merged.items():
        try:  # the algorithm's own settings (its section's fields)
            algorithm = validate_scenario({**raw, "seed": 0}).algorithm
        except ConfigError:
            settings[name] = None  # the variant's own problem, reported with its runs
            continue
        settings[name], algorithms[name] = set(type(algorithm).model_fields), algorithm.name
    skipped: dict[str, tuple[str, ...]] = {}
    for key in keys:
        setting = key.split(".")[1]
        lacking = [name for name, has in settings.items() if has is not None and setting not in has]
        if len(lacking) == len(merged):
            have = sorted(set().union(*(has for has in settings.values() if has)) - {"name"})
            problems.append(
                f"tune.grid.{key}: no tuned variant's algorithm has the setting {setting!r} ("
                + ", ".join(f"{n}: {a}" for n, a in algorithms.items())
                + f"); their settings: {', '.join(have)}."
            )
        for name in lacking:
            skipped[name] = skipped.get(name, ()) + (key,)
    return skipped


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


def widen(
    plan: TuningPlan,
    chosen: Mapping[str, dict[str, Any]],
    round_: int,
    also: Mapping[str, Sequence[dict[str, Any]]] | None = None,
) -> TuningPlan | None:
    """``plan`` with one point beyond the edge for each tuned variant whose chosen numeric value sits at the
    edge of the values it was tuned on (the chosen point with that value moved one step further), or None
    when no choice sits at an edge or every point beyond would be invalid (a step below a positive
    minimum, say) or was run already.  ``also``: variant -> its points chosen on its further measures
    (:attr:`TuningPlan.also`), widened alike; a point two choices call for is added once."""
    added: dict[str, list[dict[str, Any]]] = {}
    widened, runs = [], []
    for name in plan.variants:
        points = plan.points_of(name)
        for best, key, value in ((b, k, v) for b in (chosen[name], *(also or {}).get(name, ())) for k, v in b.items()):
            values = sorted({p[key] for p in points if _number(p.get(key))})
            if len(values) < 2 or not _number(value) or value not in (values[0], values[-1]):
                continue
            beyond = next_value(values, top=value == values[-1])
            point = {**best, key: beyond}
            if beyond is None or point in points or point in added.get(name, []):
                continue
            try:
                new_runs = _runs(name, point_id(point), plan.merged[name], point, plan.spec.seeds)
            except ConfigError:  # the value beyond is not a valid setting: the edge stays
                continue
            added.setdefault(name, []).append(point)
            widened.append(Widening(name, key, value, beyond, round_, point_id(point)))
            runs.extend(new_runs)
    if not widened:
        return None
    variant_points = {**plan.variant_points, **{n: plan.points_of(n) + tuple(p) for n, p in added.items()}}
    return replace(plan, variant_points=variant_points, runs=plan.runs + tuple(runs),
                   widened=plan.widened + tuple(widened))  # fmt: skip


def next_value(values: Sequence[float], top: bool) -> float | None:
    """One step beyond the largest (``top``) or smallest of sorted ``values``: geometric where they are
    positive with a near-constant ratio (within 20 %: 0.03, 0.1, 0.3 is log-spaced; two positive values
    always are) but not equal steps, else arithmetic; an integer grid stays integer, a float is rounded to 12
    significant digits (0.9, not 0.8999999999999999)."""
    ratios = [b / a for a, b in zip(values, values[1:])] if values[0] > 0 else []
    geometric = bool(ratios) and max(ratios) <= min(ratios) * 1.2
    if len(values) > 2 and geometric:  # equal steps too (1, 2, 3 has no constant ratio; 1, 2, 4 has)
        steps = [b - a for a, b in zip(values, values[1:])]
        geometric = max(steps) > min(steps) * 1.01
    a, b = (values[-2], values[-1]) if top else (values[1], values[0])
    beyond = b * (b / a) if geometric else b + (b - a)
    if all(isinstance(v, int) for v in values):
        beyond = round(beyond)
        if beyond == b:
            beyond = b + (1 if top else -1)
    return float(f"{beyond:.12g}") if isinstance(beyond, float) else int(beyond)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
