"""``noise_floor:``: a subset of a study's runs rerun under several CPU kernel sets, to measure how far the
machine's own arithmetic moves a result (issue 47: an FL-FDMS config rerun with AVX2 instead of AVX-512
moved last-quarter accuracy by 1.5 points, as much as the claimed effects; the virtual clock was the same)::

    noise_floor:
      cpu_capability: [default, avx2]   # torch's ATEN_CPU_CAPABILITY values, at least two
      seeds: [0, 1]                     # of seeds: (default: the first)
      variants: [fedavg, fedhist]       # of compare: (default: every variant)

Each variant x seed x capability is one more run, made in a subprocess whose environment sets
``ATEN_CPU_CAPABILITY`` (torch reads it once, when it is imported), written to
``noise_floor/<capability>/<variant>/seed<N>/`` in the sweep directory; summary.json's
``machine.torch_cpu_capability`` says which kernels it got.  The report reads them
(:mod:`asyncfl.study.noise_report`).  This module only reads the key (no pandas: ``validate`` loads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

CAPABILITIES = ("default", "avx2", "avx512")  # x86 values torch accepts (an unknown value is ignored, silently)
NOISE_DIR = "noise_floor"  # in a sweep directory
KEYS = ("cpu_capability", "seeds", "variants")
ENV = "ATEN_CPU_CAPABILITY"


@dataclass(frozen=True)
class NoiseFloor:
    """The runs ``noise_floor:`` asks for: every variant x seed under every capability."""

    capabilities: tuple[str, ...]
    seeds: tuple[int, ...]
    variants: tuple[str, ...]


@dataclass(frozen=True)
class NoiseRun:
    """One rerun of a study's run (``variant``, ``seed``, ``scenario``) under a CPU kernel set."""

    capability: str
    variant: str
    seed: int
    scenario: Any

    @property
    def rel_dir(self) -> Path:
        return Path(NOISE_DIR) / self.capability / self.variant / f"seed{self.seed}"

    @property
    def env(self) -> tuple[tuple[str, str], ...]:
        return ((ENV, self.capability),)


def noise_runs(plan: NoiseFloor | None, runs: Sequence[Any]) -> list[NoiseRun]:
    """The reruns of ``runs`` (a study's RunSpecs, tuned values applied) that ``plan`` asks for."""
    if plan is None:
        return []
    chosen = [r for r in runs if r.variant in plan.variants and r.seed in plan.seeds]
    return [NoiseRun(cap, r.variant, r.seed, r.scenario) for cap in plan.capabilities for r in chosen]


def parse_noise_floor(
    value: Any, variants: Sequence[str], seeds: Sequence[int], problems: list[str]
) -> NoiseFloor | None:
    """The ``noise_floor:`` key; each problem is appended to ``problems``, named by its path."""
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append(f"noise_floor: expected a mapping with keys {', '.join(KEYS)}; got {value!r}.")
        return None
    problems += [f"noise_floor.{k}: unknown key. Allowed here: {', '.join(KEYS)}." for k in value if k not in KEYS]
    caps = value.get("cpu_capability")
    if not isinstance(caps, list) or len(caps) < 2 or len(set(map(str, caps))) != len(caps):
        problems.append(f"noise_floor.cpu_capability: expected a list of at least two different kernel sets of "
                        f"{', '.join(CAPABILITIES)}; got {caps!r}.")  # fmt: skip
        caps = []
    bad = [c for c in caps if c not in CAPABILITIES]
    if bad:
        problems.append(
            f"noise_floor.cpu_capability: {bad[0]!r} is not a kernel set; allowed: {', '.join(CAPABILITIES)}."
        )
    chosen_seeds = _subset(value.get("seeds", list(seeds[:1])), seeds, "seeds", problems)
    chosen_variants = _subset(value.get("variants", list(variants)), variants, "variants", problems)
    return NoiseFloor(tuple(caps), tuple(chosen_seeds), tuple(chosen_variants))


def _subset(value: Any, allowed: Sequence[Any], key: str, problems: list[str]) -> list[Any]:
    """``value``, a non-empty list of items of ``allowed`` (the study's seeds: or variants)."""
    names = ", ".join(map(str, allowed))
    if not isinstance(value, list) or not value:
        problems.append(f"noise_floor.{key}: expected a non-empty list of the study's {key} ({names}); got {value!r}.")
        return []
    out = []
    for i, item in enumerate(value):
        if item in allowed and not isinstance(item, bool):
            out.append(item)
        else:
            problems.append(f"noise_floor.{key}[{i}]: {item!r} is not one of the study's {key}; allowed: {names}.")
    return list(dict.fromkeys(out))
