"""Which of a study's declared runs are results: a sweep killed, or a run that failed, leaves a study
partial, and every table computed from it must say so rather than pass the runs present off as the study.

A declared run (variant x seed, :func:`asyncfl.study.spec.declared_runs`) is a result when its directory
holds metrics.csv and a summary.json with an ended status (finished, target_reached, diverged).  Anything
else is a :class:`Gap`: no run directory, a run that failed (summary.json ``"status": "failed"`` with its
``reason``), or one that has not ended (running, interrupted, killed before writing summary.json).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from asyncfl.output.reading import has_table, read_summary
from asyncfl.output.run_directory import ENDED

NO_RUN = "no run directory"


@dataclass(frozen=True)
class Gap:
    """A declared run that is not a result, and why (``no run directory``, ``failed: <reason>``, ...)."""

    variant: str
    seed: int
    why: str


@dataclass(frozen=True)
class Completeness:
    """The runs a study declares (``variants`` x ``seeds``) and those of them that are not results."""

    variants: tuple[str, ...]
    seeds: tuple[int, ...]
    gaps: tuple[Gap, ...] = ()

    @property
    def partial(self) -> bool:
        return bool(self.gaps)

    def is_gap(self, variant: str, seed: int | None) -> bool:
        return any(g.variant == variant and g.seed == seed for g in self.gaps)

    def missing(self, variant: str) -> list[Gap]:
        return [g for g in self.gaps if g.variant == variant]

    def has_no_results(self, variant: str) -> bool:
        return variant in self.variants and len(self.missing(variant)) == len(self.seeds)

    def heading(self) -> str:
        """The bold paragraph that opens report.md and claims.md of a partial study ("" otherwise)."""
        return f"**{self.notice()}**\n\n" if self.partial else ""

    def notice(self, resume_dir: Path | None = None) -> str:
        """One paragraph saying the study is partial: what is missing, and over what the numbers are."""
        declared = len(self.variants) * len(self.seeds)
        text = (
            f"Partial study: {len(self.gaps)} of the {declared} declared runs ({len(self.variants)} variant(s) x "
            f"{len(self.seeds)} seed(s)) are not results: {'; '.join(self._listed())}. Every mean, interval, "
            f"verdict and claim here is over the {declared - len(self.gaps)} run(s) present only"
        )
        if resume_dir is not None:
            text += f"; finish the sweep with `python -m asyncfl run --resume {resume_dir}`"
        return text + "."

    def claim_gaps(self, variant: str, versus: str) -> str:
        """What a claim of ``variant`` against ``versus`` lacks ("" when both are complete)."""
        parts = [f"{side} {name}: {self._count(name)}" for side, name in (("variant", variant), ("versus", versus))
                 if self.missing(name)]  # fmt: skip
        return "; ".join(parts)

    def _count(self, variant: str) -> str:
        return f"{len(self.seeds) - len(self.missing(variant))} of {len(self.seeds)} seeds"

    def _listed(self) -> list[str]:
        """Per variant and reason, the seeds: ``deadline seeds 0, 1 (no run directory)``."""
        out = []
        for variant in dict.fromkeys(g.variant for g in self.gaps):
            by_why: dict[str, list[str]] = {}
            for gap in self.missing(variant):
                by_why.setdefault(gap.why, []).append(str(gap.seed))
            out += [f"{variant} seed(s) {', '.join(seeds)} ({why})" for why, seeds in by_why.items()]
        return out


def run_gap(run_dir: Path) -> str | None:
    """Why a declared run is not a result, or None when it is one."""
    if not run_dir.is_dir():
        return NO_RUN
    summary = read_summary(run_dir, required=False)
    status = summary.get("status")
    if status == "failed":
        return f"failed: {summary.get('reason') or 'no reason recorded'}"
    if status not in ENDED:
        return f"not ended ({status or 'no summary.json'})"
    if not has_table(run_dir / "metrics.csv"):
        return "no metrics.csv"
    return None


def study_completeness(sweep_dir: Path, variants: Sequence[str], seeds: Sequence[int]) -> Completeness:
    """Every declared ``<variant>/seed<N>/`` of ``sweep_dir`` checked with :func:`run_gap`."""
    gaps = []
    for variant in variants:
        for seed in seeds:
            why = run_gap(sweep_dir / variant / f"seed{seed}")
            if why is not None:
                gaps.append(Gap(variant, seed, why))
    return Completeness(tuple(variants), tuple(seeds), tuple(gaps))


def mark_partial_claims(rows: Sequence[Mapping], completeness: Completeness) -> list[dict]:
    """claims.csv's rows with a ``partial`` column (only when the study is partial): what each claim's two
    variants lack, "" for a claim tested on complete variants."""
    if not completeness.partial:
        return [dict(r) for r in rows]
    return [{**r, "partial": completeness.claim_gaps(r["variant"], r["versus"])} for r in rows]
