"""A study's sensitivity axis (``sensitivity:``): one setting a reviewer could reasonably choose otherwise
(FedHist's history window h, the staleness model, the horizon), run at each of its values, so that a claim
must hold at every value to be supported (an intersection–union test), and "depends on <axis>" only where
a claim declares the interaction test (:mod:`asyncfl.study.axis_verdicts`).

::

    sensitivity:
      axis: history                        # names the axis in the verdict: "depends on history"
      variants: [fedhist]                  # optional: the variants it changes (default: every variant)
      values:                              # label -> the keys set at that value, as a variant's set:
        h10: {algorithm.history: 10}
        h20: {algorithm.history: 20}

Each variant on the axis becomes one variant per value, named ``<variant>.<label>`` (its runs go to
``<sweep>/<variant>.<label>/seed<N>``) with the value's keys set after its own; a variant the axis leaves
alone runs once and is compared with every value.  A claim naming a variant on the axis is tested once per
value: by default the values together are one test of its Holm family (each at 0.05, the weakest verdict);
with ``across_axis: each`` every value's test is a member (corrected for the other values too).
A leaf (no pandas), so that ``validate`` stays light.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from asyncfl.config.schema import directory_name_problem

SENSITIVITY_KEYS = ("axis", "variants", "values")


@dataclass(frozen=True)
class Sensitivity:
    axis: str
    variants: tuple[str, ...]  # the variants the axis changes
    values: dict[str, dict[str, Any]]  # label -> dotted key -> value

    def name(self, variant: str, label: str) -> str:
        return f"{variant}.{label}"

    def expand(self, variants: Sequence[tuple[str, dict]]) -> list[tuple[str, dict]]:
        """The study's variants with each one on the axis replaced by one variant per value."""
        out = []
        for name, changes in variants:
            if name not in self.variants:
                out.append((name, changes))
                continue
            out += [(self.name(name, label), {**changes, **sets}) for label, sets in self.values.items()]
        return out


def parse_sensitivity(value: Any, variants: Sequence[str], problems: list[str]) -> Sensitivity | None:
    """The ``sensitivity:`` block checked against the study's variant names; every problem names its key."""
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append(f"sensitivity: expected a mapping {{axis, values, variants}} (got {value!r}).")
        return None
    found = [f"sensitivity.{k}: unknown key. Allowed here: {', '.join(SENSITIVITY_KEYS)}." for k in value
             if k not in SENSITIVITY_KEYS]  # fmt: skip
    axis = value.get("axis")
    if not isinstance(axis, str) or not axis:
        found.append(f"sensitivity.axis: required, a name for the axis, e.g. history (got {axis!r}).")
    listed = value.get("variants", list(variants))
    if not isinstance(listed, list) or not listed or any(v not in variants for v in listed):
        found.append(f"sensitivity.variants: a non-empty list of compare: variants ({', '.join(variants)}); "
                     f"got {listed!r}.")  # fmt: skip
        listed = []
    values = value.get("values")
    if not isinstance(values, dict) or len(values) < 2:
        example = "{h10: {algorithm.history: 10}, h20: {algorithm.history: 20}}"
        found.append(f"sensitivity.values: at least two values, each label: {{dotted key: value}}, e.g. {example} "
                     f"(got {values!r}).")  # fmt: skip
        values = {}
    for label, sets in values.items():
        problem = directory_name_problem(label)
        if problem:
            found.append(f"sensitivity.values.{label}: the label names directories, so it {problem}.")
        if not isinstance(sets, dict) or not sets:
            found.append(f"sensitivity.values.{label}: expected a mapping of keys to values (got {sets!r}).")
    taken = set(variants) & {f"{v}.{label}" for v in listed for label in values}
    found += [f"sensitivity.values: {name!r} would name two variants; rename the variant or the label."
              for name in sorted(taken)]  # fmt: skip
    problems += found
    if found:
        return None
    return Sensitivity(axis, tuple(listed), {str(k): dict(v) for k, v in values.items()})


def axis_of(raw: Mapping[str, Any], variants: Sequence[str]) -> Sensitivity | None:
    """The sensitivity axis of a study as written, or None; a ValueError lists its problems."""
    problems: list[str] = []
    found = parse_sensitivity(raw.get("sensitivity"), variants, problems)
    if problems:
        raise ValueError("\n  ".join(problems))
    return found
