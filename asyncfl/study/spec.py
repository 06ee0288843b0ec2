"""A study: one scenario file with ``compare:`` (named variants) and ``seeds:``, expanded into runs.

The study keys sit at the top level of an ordinary scenario file; everything else is the *base*
scenario that every variant starts from::

    seeds: [0, 1, 2]                 # every variant runs once per seed (sets the key ``seed``)
    targets: [0.9]                   # optional: accuracies for the time-to-target table
    baseline: no_deadline            # optional: the variant the report compares every other one with
    claims:                          # optional: claims tested by the report (asyncfl.study.claims)
      - {family: deadlines, variant: deadline_12s, versus: no_deadline, measure: final_accuracy,
         direction: higher}
    families:                        # optional: Holm families over the claims' family: labels
      paper_table_2: [deadlines]
    sensitivity:                     # optional: one setting run at several values (asyncfl.study.sensitivity)
      axis: deadline
      variants: [deadline_12s]       # becomes deadline_12s.d12 and deadline_12s.d20
      values: {d12: {server.deadline_s: 12}, d20: {server.deadline_s: 20}}
    compare:
      - name: no_deadline            # names the variant's directory and its legend entry
      - name: deadline_12s
        set: {server.deadline_s: 12} # a dotted key sets one value ...
      - name: fedbuff
        set:                         # ... a mapping is merged into the base key by key
          server: {mode: k_async, k: 5}
          algorithm: {name: fedbuff} # a new union tag (name / kind / dist) replaces the mapping
    noise_floor:                     # optional: reruns under CPU kernel sets (asyncfl.study.noise_floor)
      cpu_capability: [default, avx2]
      seeds: [0]

A variant's ``set`` is applied like ``--set``: a dotted key replaces one value (``null`` clears
it); a mapping value is merged into the base mapping recursively, except that a mapping whose
union tag (``name``, ``kind`` or ``dist``) differs from the base's replaces it whole, since the old
kind's keys do not apply to the new one.  ``--set`` on the command line edits the base (and may set
``seeds=[0,1]``); the variant's own ``set`` wins over both.

With ``tune:`` (:mod:`asyncfl.study.tuning`) each variant is first tuned on seeds of its own;
:attr:`Study.runs` are then the evaluation runs before the chosen values are applied.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from asyncfl.config import ConfigError, Scenario, apply_override, read_scenario, validate_scenario
from asyncfl.config.schema import dataset_classes, directory_name_problem
from asyncfl.config.yaml_files import dotted_parent
from asyncfl.output.columns import METRICS_COLUMNS, TEXT_COLUMNS, metrics_extra_columns
from asyncfl.study.claims import Claim, axis_problems, declare_families, expand_claims, parse_claims
from asyncfl.study.noise_floor import NoiseFloor, parse_noise_floor
from asyncfl.study.sensitivity import Sensitivity, parse_sensitivity
from asyncfl.study.tuning import TuningPlan, parse_tune

STUDY_KEYS = ("compare", "seeds", "targets", "baseline", "tune", "claims", "families", "sensitivity", "noise_floor")
VARIANT_KEYS = ("name", "set")
TAGS = ("name", "kind", "dist")
PATH_LINE = re.compile(r"^([A-Za-z_][\w]*(?:\[\d+\])*(?:\.[A-Za-z_][\w]*(?:\[\d+\])*)*): (.*)$")


@dataclass(frozen=True)
class RunSpec:
    """One variant x seed of a study."""

    variant: str
    seed: int
    scenario: Scenario

    @property
    def rel_dir(self) -> Path:
        return Path(self.variant) / f"seed{self.seed}"


@dataclass(frozen=True)
class Study:
    name: str
    variants: tuple[str, ...]
    seeds: tuple[int, ...]
    targets: tuple[float, ...]
    baseline: str | None  # the variant the report's paired differences are taken against
    runs: tuple[RunSpec, ...]
    raw: dict[str, Any]  # the study as written (after --set), saved as study.yaml in the sweep directory
    output_dir: Path
    tuning: TuningPlan | None = None  # tune: (asyncfl.study.tuning); runs are then the untuned evaluation runs
    claims: tuple[Claim, ...] = ()  # declared before the runs (asyncfl.study.claims); report tests them
    sensitivity: Sensitivity | None = None  # sensitivity: (asyncfl.study.sensitivity); variants are expanded
    noise_floor: NoiseFloor | None = None  # noise_floor: (asyncfl.study.noise_floor): reruns under CPU kernel sets


def is_study(raw: Mapping[str, Any]) -> bool:
    return "compare" in raw or "seeds" in raw


def load_study(path: str | Path, overrides: Iterable[str] = ()) -> Study:
    raw = read_scenario(path)
    for item in overrides:
        apply_override(raw, item)
    return build_study(raw, source=str(path))


def build_study(raw: Mapping[str, Any], source: str = "<study>") -> Study:
    """Expand ``raw`` into variant x seed scenarios; one :class:`ConfigError` lists every problem."""
    base = copy.deepcopy(dict(raw))
    spec = {key: base.pop(key, None) for key in STUDY_KEYS}
    problems: list[str] = []
    seeds = _seeds(spec["seeds"], base, problems)
    targets = _targets(spec["targets"], problems)
    declared = _variants(spec["compare"], problems)
    names = [name for name, _ in declared]
    axis = parse_sensitivity(spec["sensitivity"], names, problems)
    variants = axis.expand(declared) if axis else declared  # one variant per axis value (sensitivity:)
    baseline = _baseline(spec["baseline"], names, problems)
    if axis and baseline in axis.variants:
        problems.append(f"baseline: {baseline!r} is on the sensitivity axis; name a variant it leaves alone.")
    runs: list[RunSpec] = []
    for name, changes in variants:
        declared = name if name in names else _declared_name(name, axis)
        label = name[len(declared) + 1 :]
        value = (f"sensitivity.values.{label}", axis.values[label]) if axis and name != declared else None
        runs.extend(_expand(base, names.index(declared), name, changes, seeds, problems, value))
    columns = {run.variant: metrics_columns(run.scenario) for run in runs}  # every seed writes the same
    columns.update({_declared_name(v, axis): c for v, c in reversed(columns.items())})  # claims name these
    claims, claim_problems = parse_claims(spec["claims"], names, targets, columns)
    problems += claim_problems + axis_problems(spec["claims"], axis)
    claims = declare_families(claims, spec["families"], problems)  # Holm families over the claims' groups
    tuning = parse_tune(spec["tune"], _merged_variants(base, variants), seeds, targets, problems,
                        expand_claims(claims, axis), columns)  # fmt: skip
    noise = parse_noise_floor(spec["noise_floor"], [name for name, _ in variants], seeds, problems)
    if problems:
        unique = list(dict.fromkeys(problems))
        raise ConfigError(f"{source}: {len(unique)} problem(s):\n  " + "\n  ".join(unique))
    first = runs[0].scenario
    return Study(
        name=first.name,
        variants=tuple(name for name, _ in variants),
        seeds=tuple(seeds),
        targets=tuple(targets),
        baseline=baseline,
        runs=tuple(runs),
        raw=copy.deepcopy(dict(raw)),
        output_dir=first.output.dir,
        tuning=tuning,
        claims=tuple(expand_claims(claims, axis)),
        sensitivity=axis,
        noise_floor=noise,
    )


def declared_runs(raw: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The variants (sensitivity axis expanded) and seeds a study declares, read from ``raw`` (a sweep's
    study.yaml) without validating its scenarios: the runs a report of its sweep should hold."""
    problems: list[str] = []  # a sweep's study.yaml was valid when it ran; what is unreadable now is skipped
    declared = _variants(raw.get("compare"), problems)
    axis = parse_sensitivity(raw.get("sensitivity"), [name for name, _ in declared], problems)
    variants = axis.expand(declared) if axis else declared
    return tuple(name for name, _ in variants), tuple(_seeds(raw.get("seeds"), raw, problems))


def _declared_name(variant: str, axis: Sensitivity | None) -> str:
    """The compare: name a variant expanded on the sensitivity axis came from."""
    for label in axis.values if axis else ():
        if variant.endswith(f".{label}") and variant[: -len(label) - 1] in axis.variants:  # type: ignore[union-attr]
            return variant[: -len(label) - 1]
    return variant


def metrics_columns(scenario: Scenario) -> list[str]:
    """The numeric columns of metrics.csv in a run of ``scenario`` (:mod:`asyncfl.output.columns`): the
    per-class accuracies need eval.per_class, and the data set's number of classes (known without loading)."""
    classes = dataset_classes(scenario.data) if scenario.eval.per_class else 0
    written = METRICS_COLUMNS + tuple(metrics_extra_columns(classes, bool(scenario.clock.start_time)))
    return [column for column in written if column not in TEXT_COLUMNS]


def _merged_variants(base: Mapping[str, Any], variants: list[tuple[str, dict]]) -> dict[str, tuple[dict, set[str]]]:
    """Each variant's scenario before validation and the keys its set touched (tune: checks and extends them)."""
    out = {}
    for index, (name, changes) in enumerate(variants):
        try:
            out[name] = apply_set(base, changes, f"compare[{index}].set")
        except ConfigError:
            pass  # reported by _expand
    return out


def _seeds(value: Any, base: Mapping[str, Any], problems: list[str]) -> list[int]:
    if value is None:
        seed = base.get("seed", 0)
        return [seed] if isinstance(seed, int) and seed >= 0 else [0]
    if not isinstance(value, list) or not value:
        problems.append(f"seeds: expected a non-empty list of seeds, e.g. [0, 1, 2] (got {value!r}).")
        return [0]
    bad = [s for s in value if isinstance(s, bool) or not isinstance(s, int) or s < 0]
    if bad:
        problems.append(f"seeds: every seed must be a non-negative integer (got {bad[0]!r}).")
        return [0]
    if len(set(value)) != len(value):
        problems.append(f"seeds: a seed appears twice in {value}.")
    return list(dict.fromkeys(value))


def _targets(value: Any, problems: list[str]) -> list[float]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    ok = [t for t in items if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t <= 1]
    if len(ok) != len(items) or not items:
        problems.append(f"targets: expected accuracies in (0, 1], e.g. [0.8, 0.9] (got {value!r}).")
    return [float(t) for t in ok]


def _baseline(value: Any, names: list[str], problems: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in names:
        problems.append(f"baseline: must name one of the compare: variants ({', '.join(names)}); got {value!r}.")
        return None
    return value


def _variants(value: Any, problems: list[str]) -> list[tuple[str, dict[str, Any]]]:
    if value is None:
        return [("base", {})]
    if not isinstance(value, list) or not value:
        problems.append("compare: expected a non-empty list of variants, each {name: ..., set: {...}}.")
        return []
    out: list[tuple[str, dict[str, Any]]] = []
    for i, item in enumerate(value):
        where = f"compare[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: expected a mapping {{name: ..., set: {{...}}}} (got {item!r}).")
            continue
        for key in item:
            if key not in VARIANT_KEYS:
                problems.append(f"{where}.{key}: unknown key. Allowed here: {', '.join(VARIANT_KEYS)}.")
        name, changes = item.get("name"), item.get("set") or {}
        problem = directory_name_problem(name)
        if problem:  # the variant's runs go to <sweep>/<name>/
            problems.append(f"{where}.name: required, {problem} (got {name!r}).")
            name = f"variant{i}"
        elif name in {n for n, _ in out}:
            problems.append(f"{where}.name: {name!r} is used by an earlier variant; names must be unique.")
        if not isinstance(changes, dict):
            problems.append(f"{where}.set: expected a mapping of keys to values (got {changes!r}).")
            changes = {}
        out.append((name, changes))
    return out


def _expand(
    base: Mapping[str, Any],
    index: int,
    name: str,
    changes: Mapping[str, Any],
    seeds: list[int],
    problems: list[str],
    value: tuple[str, Mapping[str, Any]] | None = None,
) -> list[RunSpec]:
    """The variant's runs; ``value``: (``sensitivity.values.<label>``, the keys it sets) for a variant expanded on
    the sensitivity axis, whose keys' problems are reported there, where they were written."""
    where = f"compare[{index}]"
    value_where, sets = value or ("", {})
    try:
        merged, touched = apply_set(base, changes, f"{where}.set")
    except ConfigError as exc:
        written = next((key for key in sets if str(exc).startswith(f"{where}.set.{key}")), None)
        problems.append(str(exc) if written is None else value_where + str(exc)[len(f"{where}.set") :])
        return []
    on_axis = set().union(*(_leaf_paths(key, v) for key, v in sets.items()))
    runs = []
    for seed in seeds:
        try:
            runs.append(RunSpec(name, seed, validate_scenario({**merged, "seed": seed}, source="<variant>")))
        except ConfigError as exc:
            problems.extend(_locate(str(exc), where, name, touched, (value_where, on_axis)))
    return runs


def apply_set(base: Mapping[str, Any], changes: Mapping[str, Any], where: str) -> tuple[dict[str, Any], set[str]]:
    """``base`` with a variant's ``set`` applied, and the dotted paths the variant touched."""
    out = copy.deepcopy(dict(base))
    touched: set[str] = set()
    for key, value in changes.items():
        parts = str(key).split(".")
        if not all(parts):
            raise ConfigError(f"{where}.{key}: empty part in a dotted key.")
        node = dotted_parent(out, parts, f"{where}.{key}")
        leaf = parts[-1]
        node[leaf] = _merge(node.get(leaf), value)
        touched.update(_leaf_paths(".".join(parts), value))
    return out, touched


def _merge(old: Any, new: Any) -> Any:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return copy.deepcopy(new)
    if any(tag in new and tag in old and new[tag] != old[tag] for tag in TAGS):
        return copy.deepcopy(new)  # another kind: the old kind's keys do not apply
    out = dict(old)
    for key, value in new.items():
        out[key] = _merge(old.get(key), value)
    return out


def _leaf_paths(prefix: str, value: Any) -> set[str]:
    if isinstance(value, dict) and value:
        return set().union(*(_leaf_paths(f"{prefix}.{k}", v) for k, v in value.items()))
    return {prefix}


def _covers(keys: set[str], path: str) -> bool:
    """Whether ``path`` is one of ``keys``, inside one, or holds one."""
    return any(t == path or t.startswith(path + ".") or path.startswith(t + ".") for t in keys)


def _locate(
    message: str, where: str, name: str, touched: set[str], value: tuple[str, set[str]] = ("", set())
) -> list[str]:
    """Re-address validation problems: a key a sensitivity value set (``value``: its path and keys) is reported
    under ``sensitivity.values.<label>.``, a key the variant set under ``compare[i].set.``; anything else comes
    from the base and is reported as ``compare[i] (name): key: ...``."""
    out = []
    for line in message.splitlines()[1:]:
        line = line.strip()
        match = PATH_LINE.match(line)
        if match:
            path = re.sub(r"\[\d+\]", "", match.group(1))
            if _covers(value[1], path):
                out.append(f"{value[0]}.{line}")
                continue
            if _covers(touched, path):
                out.append(f"{where}.set.{line}")
                continue
        out.append(f"{where} ({name}): {line}")
    return out
