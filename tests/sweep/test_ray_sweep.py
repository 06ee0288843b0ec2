"""``--executor ray`` on a local Ray instance writes the layout (and the numbers) of the local executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # every test starts a local Ray instance (seconds each)

from asyncfl.output.reading import read_csv  # noqa: E402
from asyncfl.study import build_study  # noqa: E402
from asyncfl.sweep.study_sweep import run_sweep  # noqa: E402

STUDY = {
    "name": "raytiny",
    "data": {"dataset": "digits", "clients": 4},
    "model": {"name": "logreg"},
    "training": {"local_steps": 2},
    "stop": {"rounds": 2},
    "seeds": [0],
    "compare": [
        {"name": "fedavg"},
        {"name": "buff", "set": {"server": {"mode": "k_async", "k": 2, "concurrency": 3}, "algorithm.name": "fedbuff"}},
    ],
}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _files(sweep_dir: Path) -> set[str]:
    return {p.relative_to(sweep_dir).as_posix() for p in sweep_dir.rglob("*") if p.is_file()}


def _numbers(run_dir: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in read_csv(run_dir / "metrics.csv")]


def test_ray_sweep_matches_the_local_executor(local_ray, tmp_path):
    raw = {**STUDY, "output": {"dir": str(tmp_path / "runs"), "plot": True}}
    study = build_study(raw)
    on_ray = run_sweep(study, out=tmp_path / "ray", executor="ray", quiet=True)
    here = run_sweep(study, out=tmp_path / "local", executor="local", quiet=True)
    assert on_ray.failures == [] and on_ray.ran == 2
    assert _files(on_ray.sweep_dir) == _files(here.sweep_dir)
    assert "buff/seed0/timeline.png" in _files(on_ray.sweep_dir)
    for variant in ("fedavg", "buff"):
        for seed in (0,):
            rel = Path(variant) / f"seed{seed}"
            assert _numbers(on_ray.sweep_dir / rel) == _numbers(here.sweep_dir / rel)
            status = json.loads((on_ray.sweep_dir / rel / "summary.json").read_text())["status"]
            assert status == "finished"
    # resume on Ray: one run lost, the other untouched
    lost = on_ray.sweep_dir / "buff" / "seed0"
    (lost / "summary.json").unlink()
    stamp = (on_ray.sweep_dir / "fedavg" / "seed0" / "metrics.csv").stat().st_mtime_ns
    again = run_sweep(study, resume=on_ray.sweep_dir, executor="ray", quiet=True)
    assert (again.ran, again.skipped) == (1, 1)
    assert (on_ray.sweep_dir / "fedavg" / "seed0" / "metrics.csv").stat().st_mtime_ns == stamp
    assert _numbers(lost) == _numbers(here.sweep_dir / "buff" / "seed0")


def test_cli_routes_a_study_to_ray(local_ray, tmp_path, capsys):
    """The command line's --executor ray (in process, so it reuses the running local instance)."""
    from asyncfl.cli import main

    path = tmp_path / "study.yaml"
    raw = {**STUDY, "compare": STUDY["compare"][:1], "output": {"dir": str(tmp_path / "runs"), "plot": False}}
    path.write_text(yaml.safe_dump(raw))
    assert main([str(path), "--executor", "ray", "--cpus-per-task", "1", "--quiet"]) == 0
    sweep_dir = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert (sweep_dir / "fedavg" / "seed0" / "summary.json").is_file() and (sweep_dir / "comparison.csv").is_file()
