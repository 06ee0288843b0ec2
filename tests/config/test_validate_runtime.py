"""``validate`` finds what a run would fail on without training: the data set's training pool, the
partition's limits, missing data files, a population larger than the machine's memory."""

from __future__ import annotations

import importlib.util
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import scenario

from asyncfl.config import ConfigError, validate_scenario
from asyncfl.config.runnable import check_population_memory, check_runnable
from asyncfl.learn.datasets import REGISTRY, load_arrays
from asyncfl.sim.population import population_bytes

ROOT = Path(__file__).resolve().parents[2]
TINY = """\
name: tiny
data: {dataset: digits, clients: 4}
model: {name: logreg}
training: {local_steps: 2}
stop: {rounds: 2}
output: {plot: false}
"""


def cli(*args: str, cwd: Path, limit_bytes: int | None = None) -> subprocess.CompletedProcess:
    def limit() -> None:  # an address-space limit: a population allocated before the check fails there
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    command = [sys.executable, "-m", "asyncfl", *args]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=cwd, timeout=300, preexec_fn=limit if limit_bytes else None
    )


@pytest.mark.slow
def test_more_clients_than_training_samples_is_refused_by_validate_and_run(tmp_path):
    """digits keeps 1,438 of its 1,797 images for training (the rest is the global test set): 1,438
    clients get one sample each, 1,439 cannot; validate said "valid" and the run failed at loading."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY)
    study = tmp_path / "study.yaml"
    study.write_text(TINY + "seeds: [0, 1]\n")
    for command in (["validate", str(path)], ["validate", str(study)], [str(path), "--quiet"]):
        result = cli(*command, "--set", "data.clients=1439", cwd=tmp_path)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        for needle in ("data.clients (1439)", "training pool of data.dataset digits (1438 samples)", "1 to 1438"):
            assert needle in result.stderr, result.stderr
    assert not (tmp_path / "runs").exists()
    assert cli("validate", str(path), "--set", "data.clients=1438", cwd=tmp_path).returncode == 0


def test_a_timing_only_run_loads_no_data_so_its_population_is_not_bounded_by_it():
    assert scenario(timing_only=True, data={"clients": 5000}).data.clients == 5000


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"dataset": "mnist1d", "clients": 101, "mnist1d": {"train_samples": 100}}, "(100 samples)"),
        ({"partition": {"kind": "clusters", "clusters": 30}}, "data.partition.clusters (30) is larger"),
        ({"partition": {"kind": "classes", "per_client": 11}}, "data.partition.per_client (11) exceeds"),
        ({"partition": {"kind": "isolated_class", "label": 10, "clients": 2}}, "allowed 0 to 9"),
        ({"partition": {"kind": "isolated_class", "label": 1, "clients": 21}}, "data.partition.clients (21)"),
        ({"dataset": "synthetic", "test_fraction": 0}, "data.test_fraction must be greater than 0"),
    ],
)
def test_what_loading_or_partitioning_would_fail_on_is_a_validation_error(data, needle):
    with pytest.raises(ConfigError) as err:
        validate_scenario({"data": data, "model": {"name": "logreg"}}, "x.yaml")
    assert needle in str(err.value)


def test_every_problem_of_the_data_section_is_listed():
    with pytest.raises(ConfigError) as err:
        validate_scenario({"data": {"clients": 2000, "partition": {"kind": "classes", "per_client": 11}}}, "x.yaml")
    assert "data.clients (2000)" in str(err.value) and "data.partition.per_client (11)" in str(err.value)


@pytest.mark.parametrize(
    ("dataset", "section"), [("digits", {}), ("mnist1d", {"mnist1d": {"train_samples": 120, "test_samples": 30}})]
)
@pytest.mark.parametrize("seed", [0, 7])
def test_the_registered_training_pool_is_what_loading_gives(dataset, section, seed):
    data = scenario(data={"dataset": dataset, **section}, model={"name": "logreg"}).data
    assert REGISTRY[dataset].pool_size(data) == len(load_arrays(data, seed).y_train)


@pytest.mark.slow
def test_missing_torchvision_files_are_reported_by_validate_with_every_other_problem(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(TINY.replace("digits", "mnist"))
    no_files = ["--set", "data.download=false", "--set", f"data.data_dir={tmp_path}/d"]
    result = cli("validate", str(path), *no_files, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "data.dataset mnist is not available" in result.stderr and "data.download is false" in result.stderr
    result = cli("validate", str(path), *no_files, "--set", "population.device_trace=none.csv", cwd=tmp_path)
    assert result.returncode == 2 and "2 problem(s)" in result.stderr
    assert "population.device_trace" in result.stderr and "data.dataset mnist" in result.stderr
    # a download may work: only a run can tell; timing-only runs read no files
    assert cli("validate", str(path), "--set", f"data.data_dir={tmp_path}/d", cwd=tmp_path).returncode == 0
    assert cli("validate", str(path), *no_files, "--set", "timing_only=true", cwd=tmp_path).returncode == 0


@pytest.mark.slow
def test_a_population_larger_than_memory_is_refused_before_it_is_built(tmp_path):
    """10^12 timing-only clients: numpy's _ArrayMemoryError traceback at the first column before;
    now exit 2 with the estimate and the memory available, under an address-space limit that the
    population's first array would exceed (so nothing of it is allocated)."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY + "timing_only: true\n")
    huge = ["--set", f"data.clients={10**12}"]
    estimate = f"needs about {population_bytes(scenario().population, 10**12, 10**12) / 2**30:,.1f} GiB"
    for command in (["validate", str(path), *huge], [str(path), "--quiet", *huge]):
        result = cli(*command, cwd=tmp_path, limit_bytes=16 * 2**30)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        for needle in ("data.clients (1,000,000,000,000)", estimate, "available on this machine"):
            assert needle in result.stderr, result.stderr
    assert not (tmp_path / "runs").exists()


def test_the_memory_check_compares_the_estimate_with_what_is_available():
    k_async = scenario(timing_only=True, data={"clients": 10**6}, server={"mode": "k_async"},
                       population={"availability": {"kind": "always"}})  # fmt: skip
    need = population_bytes(k_async.population, 10**6, 10**6)
    check_population_memory(k_async, available=need)
    with pytest.raises(ConfigError) as raised:
        check_population_memory(k_async, available=need - 1)
    problem = str(raised.value)
    gib = f"{need / 2**30:.1f} GiB"
    assert f"needs about {gib}" in problem and f"{gib} is available" in problem
    assert "up to about 999,999" in problem
    # a sync run touches at most clients_per_round x rounds clients
    sync = scenario(timing_only=True, data={"clients": 10**6}, server={"clients_per_round": 10}, stop={"rounds": 5})
    check_population_memory(sync, available=population_bytes(sync.population, 10**6, 50))
    assert population_bytes(sync.population, 10**6, 50) < need / 2
    check_runnable(scenario())  # an ordinary scenario passes on this machine


@pytest.mark.slow
def test_the_estimate_is_near_a_measured_population():
    """The constants against a timing-only run of 20,000 clients that touches every one of them
    (benchmarks/performance/population_memory.py's measurement, at a small size): within a factor of 1.5."""
    spec = importlib.util.spec_from_file_location(
        "population_memory", ROOT / "benchmarks" / "performance" / "population_memory.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    clients = 20_000
    # one size, so an absolute peak: without the figures' fixed cost (matplotlib), which the per-client slope excludes
    measured = bench.peak_bytes(clients, bench.SERVERS["built"] + bench.FIGURES["figures off"])
    estimate = population_bytes(scenario().population, clients, clients)
    assert measured / 1.5 < estimate < measured * 1.5, (measured, estimate)
