"""Claims declared in a study file before its runs (``claims:``): which variant beats which, on which
measure, and (optionally) by how much the paper says it does.  This module reads and checks them; the
report tests them with :mod:`asyncfl.study.claim_tests` (kept apart so that ``validate`` loads neither
scipy nor pandas).

Units: accuracy claims are read in points (percent), times to target in virtual seconds; ``paper_effect``
is the size of the effect in the claim's direction, in those units (positive).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import yaml
from pydantic import Field, ValidationError

from asyncfl.errors import ConfigError
from asyncfl.output.writing import write_atomic
from asyncfl.sections import Section
from asyncfl.study.measures import ACCURACY_MEASURES, allowed_columns, column_label, column_of
from asyncfl.study.sensitivity import Sensitivity, parse_sensitivity

TIME_TO = "time_to:"
MEASURE_RULE = (
    "final_accuracy, last_quarter_accuracy, best_accuracy, last_quarter:<metrics.csv column> (e.g."
    " last_quarter:accuracy_class_9)"
    " or time_to:<target> with <target> one of targets:"
)
DIRECTIONS = ("higher", "lower")
TUNED_ON = "~"  # <variant>~<measure>: a variant's runs tuned on another of its claims' measures (study.tuning)
DECLARED_FILE = "declared_claims.yaml"  # in a sweep directory: the claims: the sweep was started with
ALPHA = 0.05  # the level of every verdict
ONE_FAMILY = "study"  # the family of a claim that names none: one family per study file
INTERNAL_FIELDS = ("axis", "axis_value", "group", "family_declared")  # Claim fields set here, never by the study file
EXACT_UP_TO = 16  # pairs: the sign-flip test enumerates all 2^n sign patterns up to here (2^16 = 65,536) ...
MONTE_CARLO_FLIPS = 100_000  # ... and draws this many above


class Claim(Section):
    """One claim of a study: what it says of the paired difference variant − versus."""

    family: str = Field(
        default=ONE_FAMILY,
        min_length=1,
        description="Holm's correction runs over the claims of one family, or of the families: entry that "
        "lists this name (default: every claim of the study file in one family; a name on one claim alone is "
        "a singleton, uncorrected, and the report says so)",
    )
    variant: str = Field(description="the variant the claim is about (a compare: name)")
    versus: str = Field(description="the variant it is compared with (another compare: name)")
    measure: str = Field(
        description="final_accuracy | last_quarter_accuracy | best_accuracy | last_quarter:<metrics.csv column> | "
        "time_to:<target> "
        "(one of targets:)"
    )
    direction: Literal["higher", "lower"] = Field(description="what the claim says of variant − versus")
    paper_effect: float | None = Field(
        default=None, gt=0, description="the paper's effect in the claim's direction: accuracy points or virtual s"
    )
    paper_data: str | None = Field(
        default=None,
        description="the data set (data.dataset) of the paper's effect: it is tested against ours only "
        "when the runs use the same, else shown as context",
    )
    source: str | None = Field(default=None, description="where the paper makes the claim, e.g. 'FedAR, Table 2'")
    paper_numbers: str | None = Field(
        default=None, description="the paper's own figures for the two variants, e.g. '82.3 vs 80.1 %' (shown as is)"
    )
    margin: float | None = Field(
        default=None,
        gt=0,
        description="equivalence margin in the claim's unit (points or virtual s), declared before the runs: a "
        "difference that two one-sided tests place inside ±margin is 'equivalent'; without one a non-significant "
        "difference is 'inconclusive' (asyncfl.study.axis_verdicts)",
    )
    across_axis: Literal["every", "each"] = Field(
        default="every",
        description="on a sensitivity axis: every (the claim must hold at every value: an intersection-union "
        "test, one test in its family, the weakest verdict) or each (every value a claim of its own)",
    )
    interaction: bool = Field(
        default=False,
        description="on a sensitivity axis: test whether the effect differs between the axis values ('depends on "
        "<axis>' comes only from this test)",
    )
    # set by expand_claims for a claim on a study's sensitivity axis, never by the study file
    axis: str | None = Field(default=None, description="the sensitivity axis this copy of the claim is tested on")
    axis_value: str | None = Field(default=None, description="the axis value (variant names end in .<value>)")
    # set by parse_claims / declare_families: a family the report calls declared, not the default
    family_declared: bool = Field(default=False, description="whether the study file named the claim's family")
    group: str | None = Field(default=None, description="the claim's own family: label, merged by a families: entry")

    @property
    def column(self) -> str:
        """The measure's name in the report (:func:`~asyncfl.study.seed_statistics.run_measures`)."""
        if self.measure in ACCURACY_MEASURES:
            return ACCURACY_MEASURES[self.measure]
        if column_of(self.measure):
            return column_label(column_of(self.measure))
        return f"time to {float(self.measure[len(TIME_TO) :]):g} (virtual s)"

    @property
    def unit(self) -> str:
        return "virtual s" if self.measure.startswith(TIME_TO) else "points"

    @property
    def sign(self) -> int:
        return 1 if self.direction == "higher" else -1

    @property
    def declared(self) -> tuple[str, str, str, str]:
        """(family, variant, versus, measure) as the study file declares it (variants without their axis value)."""
        suffix = f".{self.axis_value}" if self.axis_value is not None else ""
        runs = [v.split(TUNED_ON)[0] for v in (self.variant, self.versus)]  # a set tuned on the claim's measure
        names = [v[: -len(suffix)] if suffix and v.endswith(suffix) else v for v in runs]
        return self.family, names[0], names[1], self.measure


def user_fields() -> list[str]:
    """The keys a study file may give a claim."""
    return [name for name in Claim.model_fields if name not in INTERNAL_FIELDS]


def expand_claims(claims: Sequence[Claim], axis: Sensitivity | None) -> list[Claim]:
    """Each claim naming a variant on the sensitivity ``axis`` once per axis value (variant names
    ``<variant>.<value>``), in the declared order; the others as they are."""
    if axis is None:
        return list(claims)
    out = []
    for claim in claims:
        if claim.variant not in axis.variants and claim.versus not in axis.variants:
            out.append(claim)
            continue
        for label in axis.values:
            named = {k: axis.name(v, label) if v in axis.variants else v
                     for k, v in (("variant", claim.variant), ("versus", claim.versus))}  # fmt: skip
            out.append(claim.model_copy(update={**named, "axis": axis.axis, "axis_value": label}))
    return out


def axis_problems(value: Any, axis: Sensitivity | None) -> list[str]:
    """``claims[i].interaction: true`` on a claim whose variant and versus are both off the sensitivity axis
    (or in a study without one): there are no axis values to compare."""
    out = []
    for i, item in enumerate(value if isinstance(value, list) else []):
        if not isinstance(item, dict) or item.get("interaction") is not True:
            continue
        on_axis = axis is not None and (item.get("variant") in axis.variants or item.get("versus") in axis.variants)
        if not on_axis:
            where = ", ".join(axis.variants) if axis else "none: the study declares no sensitivity: axis"
            out.append(f"claims[{i}].interaction: tests the effect across a sensitivity axis, but neither variant nor "
                       f"versus is on one (variants on the axis: {where}); remove it or declare the axis.")  # fmt: skip
    return out


def parse_claims(
    value: Any,
    variants: Sequence[str],
    targets: Sequence[float],
    columns: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[Claim], list[str]]:
    """The claims of a study file and every problem, each named by its path ``claims[i].<field>``;
    ``columns``: the numeric metrics.csv columns each variant's runs write (:func:`asyncfl.study.spec`
    knows them from the scenarios), which a ``last_quarter:<column>`` measure must name."""
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [f"claims: expected a list of claims, each {{family, variant, versus, measure, direction}} "
                    f"(got {value!r})."]  # fmt: skip
    claims, problems, seen = [], [], set()
    for i, item in enumerate(value):
        where = f"claims[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: expected a mapping {{family, variant, versus, measure, direction}}.")
            continue
        found = _field_problems(item, where, variants, targets) + _column_problems(item, where, columns or {})
        try:
            claim = Claim.model_validate(item)
        except ValidationError as exc:  # what the checks above do not say already (paper_effect, source)
            named = {problem.split(":")[0] for problem in found}
            extra = (_pydantic_problem(where, error) for error in exc.errors())
            found += [problem for problem in extra if problem.split(":")[0] not in named]
        if found:
            problems += found
            continue
        key = (claim.family, claim.variant, claim.versus, claim.column)
        if key in seen:  # counted twice it would make Holm's correction stricter for no reason
            problems.append(f"{where}: the same claim (family, variant, versus, measure) appears twice.")
        seen.add(key)
        claims.append(claim.model_copy(update={"family_declared": "family" in item}))
    return claims, problems


def declare_families(claims: Sequence[Claim], value: Any, problems: list[str]) -> list[Claim]:
    """The claims with the study file's ``families:`` applied: a mapping family name -> the claims'
    ``family:`` labels it holds (one Holm family over several groups of claims, e.g. one per paper table);
    a label no entry names stays a family of its own.  Each problem is appended to ``problems``, named by
    its path ``families.<name>[i]``."""
    if value is None:
        return list(claims)
    labels = list(dict.fromkeys(c.family for c in claims))
    allowed = ", ".join(labels) or "none: no claim"
    if not isinstance(value, dict):
        problems.append(f"families: expected a mapping family name -> list of claims' family: labels ({allowed}); "
                        f"got {value!r}.")  # fmt: skip
        return list(claims)
    family_of: dict[str, str] = {}
    for name, members in value.items():
        problems += _family_problems(name, members, labels, family_of)
    return [claim.model_copy(update={"family": family_of[claim.family], "group": claim.family, "family_declared": True})
            if claim.family in family_of else claim for claim in claims]  # fmt: skip


def _family_problems(name: Any, members: Any, labels: Sequence[str], family_of: dict[str, str]) -> list[str]:
    """What is wrong with one ``families:`` entry; its labels go into ``family_of`` (label -> family)."""
    where, allowed = f"families.{name}", ", ".join(labels) or "none: no claim"
    if not isinstance(name, str) or not name:
        return [f"families: a family's name must be a non-empty string; got {name!r}."]
    if not isinstance(members, list) or not members:
        return [f"{where}: expected a non-empty list of claims' family: labels ({allowed}); got {members!r}."]
    out = []
    if name in labels and name not in members:  # its claims would join this family unlisted
        out.append(f"{where}: {name!r} is also a claim's family: label; list it here or name the family otherwise.")
    for i, label in enumerate(members):
        if label not in labels:
            out.append(f"{where}[{i}]: {label!r} is no claim's family: label; allowed: {allowed}.")
        elif label in family_of:
            out.append(f"{where}[{i}]: {label!r} is already in families.{family_of[label]}; a claim is in one family.")
        else:
            family_of[label] = name
    return out


def smallest_p(pairs: int) -> float:
    """The least p-value the paired sign-flip test (:func:`asyncfl.study.claim_tests.sign_flip_p`) can give
    with ``pairs`` pairs: 2^-n when it enumerates every sign pattern (only the observed one, all differences
    on the claimed side, reaches the observed sum), 1 / (1 + 100,000) when it draws them (no draw reaches
    it), 1 with no pair."""
    if pairs <= 0:
        return 1.0
    return 2.0**-pairs if pairs <= EXACT_UP_TO else 1 / (1 + MONTE_CARLO_FLIPS)


def smallest_holm_p(pairs: int, family_size: int) -> float:
    """The least Holm-adjusted p in a family of ``family_size`` claims: the smallest p ranks first and is
    multiplied by the family size."""
    return min(1.0, family_size * smallest_p(pairs))


def unreachable_families(claims: Sequence[Claim], seeds: int) -> list[str]:
    """A warning per family no claim of which can be supported with ``seeds`` evaluation seeds (the most
    pairs a claim can have): its smallest Holm-adjusted p is not below 0.05."""
    members = {(c.family, c.declared if c.axis and c.across_axis == "every" else i) for i, c in enumerate(claims)}
    sizes: dict[str, int] = {}
    for family, _ in members:  # a claim at every axis value is one member (an intersection-union test)
        sizes[family] = sizes.get(family, 0) + 1
    out = []
    for family, size in sizes.items():
        best = smallest_holm_p(seeds, size)
        if best < ALPHA:
            continue
        enough = next((n for n in range(seeds + 1, EXACT_UP_TO + 2) if smallest_holm_p(n, size) < ALPHA), None)
        fix = f"use at least {enough} seeds, or fewer claims in the family" if enough else "fewer claims in the family"
        out.append(
            f"claims: family {family!r} ({size} claim(s)) cannot reach significance with {seeds} seed(s): the "
            f"sign-flip p is at least {smallest_p(seeds):.4g}, and {best:.4g} after Holm's correction over {size} "
            f"claim(s), not below {ALPHA}, so no claim of it can be supported: {fix}."
        )
    return out


def record_claims(sweep_dir: Path, claims: Any, families: Any = None) -> None:
    """Write the claims a sweep starts with (none is a record too: claims added later are as post hoc), and
    its ``families:`` where it declares some, into :data:`DECLARED_FILE`, once: a resumed sweep keeps the
    first record."""
    path = sweep_dir / DECLARED_FILE
    if not path.is_file():
        note = "# the claims: this sweep was started with; report tests these, whatever study.yaml says later\n"
        record = {"claims": claims} if families is None else {"claims": claims, "families": families}
        write_atomic(path, note + yaml.safe_dump(record, sort_keys=False))


def declared_claims(sweep_dir: Path) -> tuple[bool, Any]:
    """(whether the sweep has a record, the claims: recorded at its start); a sweep from before the record
    existed has none."""
    recorded, record = _record(sweep_dir)
    return recorded, record.get("claims")


def declared_families(sweep_dir: Path, raw: Mapping[str, Any]) -> tuple[Any, str]:
    """The ``families:`` a sweep's claims are tested in, and a note when they were not declared with them:
    those recorded at the sweep's start; where the record holds none, those of its study.yaml (``raw``),
    which were then declared after the sweep started, and the note says so (a sweep from before the record:
    its study.yaml's, no note) (families chosen after seeing
    results could decide verdicts: the study-wide Holm column beside them is the check)."""
    recorded, record = _record(sweep_dir)
    now = raw.get("families")
    if recorded and "families" in record:
        differ = now != record["families"]
        return record["families"], (f"the families: in study.yaml differ from those this sweep was run with "
                                    f"({DECLARED_FILE}); the recorded ones are used." if differ else "")  # fmt: skip
    if now is None or not recorded:  # a sweep from before the record: its study.yaml is all there is
        return now, ""
    return now, (
        f"the families: were declared after this sweep started (in study.yaml, not in {DECLARED_FILE}), so after "
        "its runs could be seen: compare each verdict with the study-wide Holm one beside it."
    )


def _record(sweep_dir: Path) -> tuple[bool, dict]:
    path = sweep_dir / DECLARED_FILE
    if not path.is_file():
        return False, {}
    try:
        record = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return True, {"claims": record.get("claims"), **record}
    except (yaml.YAMLError, AttributeError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc}); it records the claims the sweep was run with.") from None


def study_claims(raw: Mapping[str, Any], source: str) -> list[Claim]:
    """The claims of a study as written (a sweep's study.yaml), checked against its variants and targets,
    each on the study's sensitivity axis once per value (:func:`expand_claims`)."""
    variants = [v.get("name") for v in raw.get("compare") or [] if isinstance(v, dict)] or ["base"]
    targets = raw.get("targets") if isinstance(raw.get("targets"), list) else [raw.get("targets")]
    numbers = [float(t) for t in targets if isinstance(t, (int, float)) and not isinstance(t, bool)]
    claims, problems = parse_claims(raw.get("claims"), variants, numbers)
    claims = declare_families(claims, raw.get("families"), problems)
    axis = parse_sensitivity(raw.get("sensitivity"), variants, problems)
    problems += axis_problems(raw.get("claims"), axis)
    if problems:
        raise ConfigError(f"{source}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return expand_claims(claims, axis)


def _field_problems(
    item: Mapping[str, Any], where: str, variants: Sequence[str], targets: Sequence[float]
) -> list[str]:
    allowed = ", ".join(variants)
    out = [f"{where}.{k}: unknown key. Allowed here: {', '.join(user_fields())}." for k in item
           if k not in user_fields()]  # fmt: skip
    for key in ("variant", "versus"):
        if item.get(key) not in variants:
            out.append(f"{where}.{key}: must name a variant of compare: ({allowed}); got {item.get(key)!r}.")
    if item.get("variant") is not None and item.get("variant") == item.get("versus"):
        out.append(f"{where}.versus: a variant cannot be compared with itself ({item['variant']!r}).")
    if item.get("direction") not in DIRECTIONS:
        out.append(f"{where}.direction: allowed: higher, lower (variant − versus); got {item.get('direction')!r}.")
    measure = item.get("measure")
    known = isinstance(measure, str) and (
        measure in ACCURACY_MEASURES or column_of(measure) is not None or measure.startswith(TIME_TO)
    )
    if not known:
        out.append(f"{where}.measure: allowed: {MEASURE_RULE}; got {measure!r}.")
    elif measure.startswith(TIME_TO) and _target(measure) not in targets:
        listed = ", ".join(f"{t:g}" for t in targets) or "none"
        out.append(
            f"{where}.measure: {measure!r}: the target must be one of targets: ({listed}), fixed before the runs."
        )
    if "family" in item and (not isinstance(item.get("family"), str) or not item.get("family")):
        out.append(f"{where}.family: a name for the group of claims Holm's correction runs over (default: one "
                   f"family for the study file); got {item.get('family')!r}.")  # fmt: skip
    return out


def _column_problems(item: Mapping[str, Any], where: str, columns: Mapping[str, Sequence[str]]) -> list[str]:
    """A ``last_quarter:<column>`` measure naming a column that the runs of its variant or versus never write."""
    column = column_of(item["measure"]) if isinstance(item.get("measure"), str) else None
    out = []
    for key in ("variant", "versus"):
        written = columns.get(item.get(key))  # type: ignore[arg-type]
        if column is None or written is None or column in written:
            continue
        out.append(
            f"{where}.measure: {item['measure']!r}: the runs of {key} {item[key]!r} write no column {column} to "
            f"metrics.csv; {allowed_columns(column, written)}."
        )
    return out


def _target(measure: str) -> float | None:
    try:
        return float(measure[len(TIME_TO) :])
    except ValueError:
        return None


def _pydantic_problem(where: str, error: Mapping[str, Any]) -> str:
    path = ".".join(str(part) for part in error["loc"])
    return f"{where}.{path}: {error['msg']} (got {error.get('input')!r})."
