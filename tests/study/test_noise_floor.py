"""Noise floors (issue 47, item 5): each claim's effect against the seed-to-seed spread of its paired
differences and against the largest difference one variant x seed shows under two CPU kernel sets
(``noise_floor:``, reruns in subprocesses with ATEN_CPU_CAPABILITY set)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from asyncfl.errors import ConfigError
from asyncfl.output.reading import read_csv
from asyncfl.sections import resolved_dump
from asyncfl.study import build_study
from asyncfl.study.claims import Claim
from asyncfl.study.noise_report import floor_words
from asyncfl.study.report import write_report
from asyncfl.study.seed_statistics import RunRecord
from asyncfl.sweep import jobs as sweep_jobs
from asyncfl.sweep.study_sweep import run_sweep
from tests.conftest import replace_training, write_finished_run
from tests.study.test_study import BASE as STUDY_BASE

CLAIM = Claim(family="f", variant="a", versus="b", measure="final_accuracy", direction="higher")


def write_study_runs(sweep: Path, finals: dict[str, list[float]]) -> list[RunRecord]:
    records = []
    for variant, values in finals.items():
        for seed, acc in enumerate(values):
            write_finished_run(sweep / variant / f"seed{seed}", {"seed": seed}, acc)
            records.append(RunRecord(variant, seed, sweep / variant / f"seed{seed}"))
    return records


def test_floors_by_hand(tmp_path):
    """a − b per seed: +10, +12, +4 points; mean 8.667, SD sqrt((1.333² + 3.333² + 4.667²) / 2) = sqrt(17.333)
    = 4.163.  Reruns of seed 0: a 0.60 / 0.62 (2 points apart), b 0.50 / 0.47 (3 points): kernel floor 3.0.
    8.667 exceeds both."""
    records = write_study_runs(tmp_path, {"a": [0.60, 0.70, 0.65], "b": [0.50, 0.58, 0.61]})
    for cap, a, b in (("default", 0.60, 0.50), ("avx2", 0.62, 0.47)):
        write_finished_run(tmp_path / "noise_floor" / cap / "a" / "seed0", {"seed": 0}, a)
        write_finished_run(tmp_path / "noise_floor" / cap / "b" / "seed0", {"seed": 0}, b)
    write_report(tmp_path, records, "b", claims=[CLAIM])
    (row,) = read_csv(tmp_path / "noise_floor.csv")
    assert float(row["effect"]) == pytest.approx(26 / 3, abs=1e-5)
    assert float(row["seed_floor"]) == pytest.approx(math.sqrt(52 / 3), abs=1e-5)
    assert float(row["kernel_floor"]) == pytest.approx(3.0, abs=1e-5)
    assert row["floors"] == "exceeds both floors"
    report = (tmp_path / "report.md").read_text()
    assert "## Noise floors" in report
    assert "| a vs b | final_accuracy | 3 | 8.67 | 4.16 | 3.00 | exceeds both floors |" in report


def test_without_reruns_the_kernel_floor_is_not_measured(tmp_path):
    records = write_study_runs(tmp_path, {"a": [0.60, 0.70, 0.65], "b": [0.50, 0.58, 0.61]})
    write_report(tmp_path, records, "b", claims=[CLAIM])
    (row,) = read_csv(tmp_path / "noise_floor.csv")
    assert row["kernel_floor"] == "" and row["floors"] == "exceeds the seed noise floor; kernel floor not measured"


def test_floor_words():
    assert floor_words(2.0, 3.0, 0.5) == "within the seed noise floor"
    assert floor_words(-4.0, 3.0, 5.0) == "within the CPU kernel noise floor"  # the size counts, not the sign
    assert floor_words(4.0, 3.0, 1.0) == "exceeds both floors"
    assert floor_words(4.0, math.nan, 1.0) == "seed floor unknown (fewer than two pairs)"


def study_raw(tmp_path: Path, noise_floor) -> dict:
    compare = [{"name": "slow", "set": {"training.lr": 0.01}}, {"name": "fast", "set": {"training.lr": 0.1}}]
    out = {"plot": False, "dir": str(tmp_path / "runs")}
    return {**STUDY_BASE, "output": out, "seeds": [0, 1], "compare": compare, "noise_floor": noise_floor}


def test_noise_floor_key_names_its_mistakes(tmp_path):
    bad = {"cpu_capability": ["default", "sse4"], "seeds": [0, 7], "variants": ["quick"], "runs": 2}
    with pytest.raises(ConfigError) as raised:
        build_study(study_raw(tmp_path, bad), "study.yaml")
    text = str(raised.value)
    assert "noise_floor.runs: unknown key. Allowed here: cpu_capability, seeds, variants." in text
    assert "noise_floor.cpu_capability: 'sse4' is not a kernel set; allowed: default, avx2, avx512." in text
    assert "noise_floor.seeds[1]: 7 is not one of the study's seeds; allowed: 0, 1." in text
    assert "noise_floor.variants[0]: 'quick' is not one of the study's variants; allowed: slow, fast." in text
    with pytest.raises(ConfigError, match=r"noise_floor.cpu_capability: expected a list of at least two different"):
        build_study(study_raw(tmp_path, {"cpu_capability": ["avx2"]}))


def test_a_sweep_reruns_the_chosen_runs_with_the_capability_in_their_environment(tmp_path, monkeypatch):
    """Default seeds: the first; default variants: all.  Each rerun goes to noise_floor/<cap>/<variant>/seed0."""
    envs = []

    def run_job(scenario: dict, run_dir: Path, resume: bool = False) -> dict:
        return write_finished_run(run_dir, scenario, 0.5 + scenario["training"]["lr"])

    def in_subprocess(job) -> dict:
        envs.append((job.variant, job.seed, dict(job.env)))
        return write_finished_run(job.run_dir, job.scenario, 0.5)

    replace_training(monkeypatch, run_job)
    monkeypatch.setattr(sweep_jobs, "run_in_subprocess", in_subprocess)
    study = build_study(study_raw(tmp_path, {"cpu_capability": ["default", "avx2"]}))
    sweep = run_sweep(study, quiet=True).sweep_dir
    assert envs == [(v, 0, {"ATEN_CPU_CAPABILITY": cap}) for cap in ("default", "avx2") for v in ("slow", "fast")]
    reruns = sorted(str(p.relative_to(sweep)) for p in sweep.glob("noise_floor/*/*/seed*"))
    assert reruns == [f"noise_floor/{cap}/{v}/seed0" for cap in ("avx2", "default") for v in ("fast", "slow")]


@pytest.mark.slow
def test_the_capability_reaches_torch_in_the_subprocess(tmp_path):
    """Two real runs of one tiny scenario, under the default and the AVX2 kernels: each run's summary.json
    records the kernel set torch dispatched to."""
    scenario = {**STUDY_BASE, "output": {"plot": False, "dir": str(tmp_path)}, "seed": 0}
    resolved = resolved_dump(build_study(scenario).runs[0].scenario)
    got = {}
    for cap in ("default", "avx2"):
        job = sweep_jobs.Job("a", 0, resolved, tmp_path / cap, env=(("ATEN_CPU_CAPABILITY", cap),))
        assert sweep_jobs.run_in_subprocess(job)["status"] in ("finished", "target_reached")
        got[cap] = json.loads((tmp_path / cap / "summary.json").read_text())["machine"]["torch_cpu_capability"]
    assert got == {"default": "DEFAULT", "avx2": "AVX2"}
