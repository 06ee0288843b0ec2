"""The evaluation runs of a variant tuned on each of several claimed measures (:mod:`asyncfl.study.tuning`):
which set of runs each (variant, measure) was made with, as tuned.yaml's ``per_measure`` records it, and the
claims moved onto the set tuned on their own measure.  Apart from :mod:`asyncfl.study.tuning_results` so that
the report and the command line read them without the choice."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from asyncfl.study.claims import Claim
from asyncfl.study.tuning import TUNED_FILE, set_name


def split_choice(
    each: Mapping[str, Mapping[str, dict[str, Any]]],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """:func:`~asyncfl.study.tuning_results.choose_each`'s choice as variant -> the point on its first measure,
    and variant -> the points on its others."""
    return {n: next(iter(p.values())) for n, p in each.items()}, {n: list(p.values())[1:] for n, p in each.items()}


def evaluation_sets(each: Mapping[str, Mapping[str, dict[str, Any]]]) -> dict[tuple[str, str], str]:
    """(variant, measure) -> the evaluation runs that measure's claims read: the variant's own where the point
    is the one chosen on its first measure, else those of :func:`~asyncfl.study.tuning.set_name`."""
    out = {}
    for name, points in each.items():
        first = next(iter(points.values()))
        out.update({(name, m): name if p == first else set_name(name, m) for m, p in points.items()})
    return out


def measure_sets(folder: Path) -> list[str]:
    """The evaluation runs ``folder``'s tuning added for variants tuned on several measures (tuned.yaml's
    ``per_measure``: ``<variant>~<measure>`` where that measure chose another point), as the sweep declared them."""
    per = per_measure(folder)
    return [e["runs"] for name, measures in per.items() for e in measures.values() if e["runs"] != name]


def claims_on_tuned_sets(claims: Sequence[Claim], folder: Path) -> list[Claim]:
    """``claims`` with each variant (and versus) that was tuned on several measures named by the runs tuned on the
    claim's own measure (``folder``/tuned.yaml's ``per_measure``): ``fl_fdms~time_to_0.401`` where that measure
    chose another point than the variant's first; the claims as they are where nothing was tuned so."""
    per = per_measure(folder)
    if not per:
        return list(claims)
    sets = {(name, m): entry["runs"] for name, measures in per.items() for m, entry in measures.items()}
    return [c.model_copy(update={k: sets.get((getattr(c, k), c.measure), getattr(c, k)) for k in ("variant", "versus")})
            for c in claims]  # fmt: skip


def per_measure(folder: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``folder``/tuned.yaml's ``per_measure`` (variant -> measure -> chosen, runs); {} where there is none."""
    path = folder / TUNED_FILE
    record = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    return (record or {}).get("per_measure") or {}
