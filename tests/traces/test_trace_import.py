"""``traces convert``: FedScale's capacity and behaviour pickles and FLASH's state traces, written as
those projects distribute them, converted to asyncfl's CSV traces; every value checked by hand."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

from asyncfl.cli import main
from asyncfl.config import validate_scenario
from asyncfl.config.loading import check_trace_files
from asyncfl.sim.availability.trace import read_availability_trace
from asyncfl.sim.profiles import read_device_trace
from asyncfl.traces.windows import unroll
from tests.conftest import table

CAPACITY = {  # FedScale's client_device_capacity: ms per sample (inference), kbit/s
    1: {"computation": 10.0, "communication": 1000.0},
    2: {"computation": 50.0, "communication": 500.0},
    3: {"computation": 162.0, "communication": 5648.109619499134},
}
BEHAVIOR = {  # FedScale's client_behave_trace: online from active[i] to inactive[i], period finish_time
    7: {"duration": 40, "inactive": [30, 80], "finish_time": 100, "active": [10, 60], "model": "CPH1801"},
    3: {"duration": 100, "inactive": [100], "finish_time": 100, "active": [0], "model": "SM-G960F"},
}


def _pickle(tmp_path, name, data):
    path = tmp_path / name
    with open(path, "wb") as handle:
        pickle.dump(data, handle)
    return path


def _convert(tmp_path, capsys, *args):
    code = main(["traces", "convert", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fedscale_capacity_ms_per_sample_and_kbits(tmp_path, capsys):
    src = _pickle(tmp_path, "client_device_capacity", CAPACITY)
    out = tmp_path / "devices.csv"
    code, stdout, _ = _convert(tmp_path, capsys, src, "--from", "fedscale-capacity", "--out", out)
    assert code == 0 and str(out) in stdout
    rows = table(out)
    assert list(rows[0]) == ["client", "samples_per_s", "uplink_mbps", "downlink_mbps", "latency_s"]
    # client 0 = key 1: training 3 x 10 ms per sample -> 1000 / 30 samples/s; 1000 kbit/s of 1024 bits
    assert float(rows[0]["samples_per_s"]) == pytest.approx(1000 / 30)
    assert float(rows[0]["uplink_mbps"]) == pytest.approx(1.024) == float(rows[0]["downlink_mbps"])
    assert float(rows[1]["samples_per_s"]) == pytest.approx(1000 / 150)
    assert float(rows[1]["uplink_mbps"]) == pytest.approx(0.512)
    assert [float(r["latency_s"]) for r in rows] == [0.0, 0.0, 0.0]
    assert table(tmp_path / "devices.mapping.csv") == [
        {"client": "0", "trace_key": "1"}, {"client": "1", "trace_key": "2"}, {"client": "2", "trace_key": "3"}
    ]  # fmt: skip
    # the same seconds as FedScale for a task: compute 3 * batch * steps * ms / 1000, transfer bytes/1024*8/kbps
    profiles = read_device_trace(out, 3, 0.0)
    nbytes, batch, steps = 250_000, 20, 5
    for profile, entry in zip(profiles, CAPACITY.values()):
        fedscale_compute = 3.0 * batch * steps * entry["computation"] / 1000.0
        fedscale_transfer = 2 * (nbytes / 1024 * 8) / entry["communication"]
        assert profile.compute_s(batch * steps) == pytest.approx(fedscale_compute)
        assert profile.download_s(nbytes) + profile.upload_s(nbytes) == pytest.approx(fedscale_transfer)


def test_fedscale_capacity_options_si_kbit_augmentation_latency(tmp_path, capsys):
    src = _pickle(tmp_path, "cap.pkl", CAPACITY)
    out = tmp_path / "si.csv"
    args = ("--kbit", 1000, "--augmentation", 1, "--latency", 0.05)
    code, _, _ = _convert(tmp_path, capsys, src, "--from", "fedscale-capacity", "--out", out, *args)
    assert code == 0
    first = table(out)[0]
    assert float(first["samples_per_s"]) == pytest.approx(100.0)  # 1000 / (1 x 10 ms)
    assert float(first["uplink_mbps"]) == pytest.approx(1.0)
    assert float(first["latency_s"]) == 0.05


def test_fedscale_behavior_unrolls_the_modulo_repetition(tmp_path, capsys):
    src = _pickle(tmp_path, "client_behave_trace", BEHAVIOR)
    out = tmp_path / "online.csv"
    code, _, _ = _convert(tmp_path, capsys, src, "--from", "fedscale-behavior", "--out", out, "--horizon", 220)
    assert code == 0
    rows = [(int(r["client"]), float(r["start_s"]), float(r["end_s"])) for r in table(out)]
    # keys in numeric order: client 0 = key 3 (online the whole period: one merged interval), client 1 = key 7
    assert rows == [
        (0, 0.0, 220.0),
        (1, 10.0, 30.0), (1, 60.0, 80.0), (1, 110.0, 130.0), (1, 160.0, 180.0), (1, 210.0, 220.0),
    ]  # fmt: skip
    assert table(tmp_path / "online.mapping.csv") == [
        {"client": "0", "trace_key": "3"},
        {"client": "1", "trace_key": "7"},
    ]
    intervals = read_availability_trace(out, 2)  # what a scenario's availability: {kind: trace} reads
    assert intervals[1][-1] == (210.0, 220.0)


def test_unroll_edge_cases():
    # a window past finish_time is clipped by the reader; here: a client first online after the horizon
    assert unroll([(10.0, 30.0)], 100.0, 5.0) == [(10.0, 30.0)]
    # windows touching across the period boundary merge
    assert unroll([(0.0, 20.0), (80.0, 100.0)], 100.0, 250.0) == [(0.0, 20.0), (80.0, 120.0), (180.0, 220.0)]


def test_mapping_is_reproducible_and_samples_with_replacement_when_short(tmp_path, capsys):
    big = {i: {"computation": float(i), "communication": 100.0 * i} for i in range(1, 21)}
    src = _pickle(tmp_path, "cap.pkl", big)

    def mapping(name, *args):
        out = tmp_path / f"{name}.csv"
        assert _convert(tmp_path, capsys, src, "--from", "fedscale-capacity", "--out", out, *args)[0] == 0
        keys = [r["trace_key"] for r in table(tmp_path / f"{name}.mapping.csv")]
        speeds = [float(r["samples_per_s"]) for r in table(out)]
        assert speeds == [pytest.approx(1000 / (3 * int(k))) for k in keys]  # rows follow the mapping
        return keys

    a, b, c = (
        mapping("a", "--clients", 8, "--seed", 1),
        mapping("b", "--clients", 8, "--seed", 1),
        mapping("c", "--clients", 8, "--seed", 2),
    )
    assert a == b and a != c
    assert len(set(a)) == 8  # fewer clients than entries: drawn without replacement
    many = mapping("many", "--clients", 50, "--seed", 1)
    assert len(many) == 50 and len(set(many)) <= 20 and set(many) <= {str(i) for i in range(1, 21)}


FLASH_MESSAGES = "\n".join(
    [
        "2020-01-02 00:00:00\twifi",
        "2020-01-02 00:01:40\tbattery_charged_on",
        "2020-01-02 00:03:20\tscreen_lock",  # ready from 200 s (locked, charging, WiFi)
        "2020-01-02 00:05:00\tscreen_unlock",  # ... to 300 s
        "2020-01-02 00:10:00\t80%",
        "2020-01-02 00:16:40\tbattery_charged_off",  # trace end 1000 s: period 1000 s
    ]
)
FLASH_LATE = "\n".join(  # starts at 08:00 = 28800 s: ready 28900..29000, period 1000
    [
        "2020-01-02 08:00:00\tWiFi",
        "2020-01-02 08:00:00\tbattery_charged_on",
        "2020-01-02 08:01:40\tscreen_lock",
        "2020-01-02 08:03:20\t4G",
        "2020-01-02 08:16:40\tscreen_unlock",
    ]
)


def test_flash_state_traces_ready_windows_and_period(tmp_path, capsys):
    traces = {
        "b": {"guid": "b", "model": "Redmi Note 8", "messages": FLASH_LATE},
        "a": {"guid": "a", "model": "MI 8", "messages": FLASH_MESSAGES},
        "broken": {"guid": "broken", "model": "x", "messages": "yesterday\tscreen_lock"},
        "cached": {"isSuccess": True, "trace_start": 0, "trace_end": 500, "ready_time": [[100, 150]]},
    }
    src = tmp_path / "state_traces.json"
    src.write_text(json.dumps(traces))
    out = tmp_path / "flash.csv"
    code, _, err = _convert(tmp_path, capsys, src, "--from", "flash", "--out", out, "--horizon", 2500)
    assert code == 0 and "1 skipped" in err and "broken" in err
    rows = [(int(r["client"]), float(r["start_s"]), float(r["end_s"])) for r in table(out)]
    by_client = {c: [(s, e) for cc, s, e in rows if cc == c] for c in range(3)}
    assert by_client[0] == [(200.0, 300.0), (1200.0, 1300.0), (2200.0, 2300.0)]  # key a
    # key b: FLASH reads t as trace_start + (t - trace_start) mod 1000: 28900..29000 -> 900..1000 mod 1000
    assert by_client[1] == [(900.0, 1000.0), (1900.0, 2000.0)]
    assert by_client[2][:2] == [(100.0, 150.0), (600.0, 650.0)]  # the cached ready_time form, period 500
    assert [r["trace_key"] for r in table(tmp_path / "flash.mapping.csv")] == ["a", "b", "cached"]


def test_converted_traces_run_in_a_scenario(tmp_path, capsys):
    cap = _pickle(tmp_path, "cap.pkl", CAPACITY)
    beh = _pickle(tmp_path, "beh.pkl", BEHAVIOR)
    args = ("--clients", 4, "--seed", 3)
    assert _convert(tmp_path, capsys, cap, "--from", "fedscale-capacity", "--out", tmp_path / "dev.csv", *args)[0] == 0
    assert _convert(tmp_path, capsys, beh, "--from", "fedscale-behavior", "--out", tmp_path / "on.csv", *args)[0] == 0
    scenario = validate_scenario(
        {
            "data": {"clients": 4},
            "population": {
                "device_trace": str(tmp_path / "dev.csv"),
                "availability": {"kind": "trace", "file": str(tmp_path / "on.csv")},
            },  # fmt: skip
            "server": {"mode": "k_async", "k": 2, "concurrency": 2},
            "stop": {"virtual_time_s": 200},
            "timing_only": True,
            "output": {"plot": False},
        }
    )
    check_trace_files(scenario)
    from asyncfl.runner.start import run_scenario

    run_dir = run_scenario(scenario, tmp_path / "run", quiet=True)
    clients = table(run_dir / "clients.csv")
    keys = [r["trace_key"] for r in table(tmp_path / "dev.mapping.csv")]
    assert [float(c["samples_per_s"]) for c in clients] == [
        pytest.approx(1000 / (3 * CAPACITY[int(k)]["computation"])) for k in keys
    ]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--from", "fedscale-capacity", "--clients", "0"], ["--clients", ">= 1"]),
        (["--from", "fedscale-behavior", "--horizon", "-3"], ["--horizon", "positive"]),
        (["--from", "fedscale-capacity", "--kbit", "999"], ["--kbit", "1000, 1024"]),
        (["--from", "fedscale-behavior"], ["no usable fedscale-behavior entry", "'active'"]),  # a capacity file
        (["--from", "flash"], ["not a readable JSON file"]),
        (["--from", "fedscale-capacity", "--out", "/proc/x/y.csv"], ["--out /proc/x/y.csv", "cannot write"]),
    ],
)
def test_bad_input_is_one_clear_error(tmp_path, capsys, args, words):
    src = _pickle(tmp_path, "cap.pkl", CAPACITY)
    out = [] if "--out" in args else ["--out", tmp_path / "x.csv"]
    code, _, err = _convert(tmp_path, capsys, src, *args, *out)
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    for word in words:
        assert word in err


@pytest.mark.slow
def test_unknown_format_and_unpickleable_file_exit_2_without_traceback(tmp_path):
    bad = tmp_path / "not_a_pickle"
    bad.write_text("hello")
    for args, word in (
        (["--from", "oort", str(bad)], "invalid choice"),
        (["--from", "fedscale-capacity", str(bad)], "not a readable pickle"),
    ):
        command = [sys.executable, "-m", "asyncfl", "traces", "convert", *args, "--out", str(tmp_path / "o.csv")]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and word in done.stderr and "Traceback" not in done.stderr


def test_unroll_matches_fedscales_modulo_rule_at_random_times():
    """Online in the unrolled intervals <=> active[i] <= t mod finish_time < inactive[i] for some i."""
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(50):
        period = float(rng.integers(50, 500))
        cuts = np.sort(rng.choice(np.arange(1, int(period)), size=2 * int(rng.integers(1, 5)), replace=False))
        windows = [(float(a), float(b)) for a, b in zip(cuts[::2], cuts[1::2])]
        horizon = float(rng.uniform(period, 6 * period))
        intervals = unroll(windows, period, horizon)
        assert all(a < b <= c for (a, b), (c, _) in zip(intervals, intervals[1:]))  # sorted, disjoint
        for t in rng.uniform(0, horizon, size=200):
            expected = any(a <= t % period < b for a, b in windows)
            assert any(a <= t < b for a, b in intervals) == expected


class _RunsAShellCommand:
    """What a malicious trace file holds: unpickling it calls os.system (here: create a marker file)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


@pytest.mark.slow
def test_a_pickle_that_would_run_code_is_refused_not_run(tmp_path):
    marker = tmp_path / "executed"
    evil = _pickle(
        tmp_path, "client_device_capacity", {1: {"computation": 10.0, "communication": _RunsAShellCommand(marker)}}
    )
    command = [sys.executable, "-m", "asyncfl", "traces", "convert", str(evil), "--from", "fedscale-capacity"]
    done = subprocess.run([*command, "--out", str(tmp_path / "o.csv")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert str(evil) in done.stderr and "refused" in done.stderr
    assert "posix.system" in done.stderr or "os.system" in done.stderr  # the global it names
    assert not marker.exists() and not (tmp_path / "o.csv").exists()
    assert "can run code" in subprocess.run([*command[:5], "--help"], capture_output=True, text=True).stdout


def test_plain_data_written_by_other_tools_still_loads(tmp_path, capsys):
    import collections

    import numpy as np

    # the same data as CAPACITY, written another way: an OrderedDict (also by protocol 2, which names
    # builtins and collections as globals) and numpy float scalars (protocol >= 3: their bytes need no codec)
    ordered = collections.OrderedDict((k, dict(v)) for k, v in CAPACITY.items())
    numpy_floats = {k: {key: np.float64(x) for key, x in v.items()} for k, v in CAPACITY.items()}
    out = tmp_path / "o.csv"
    for i, (data, protocol) in enumerate(((ordered, 2), (ordered, 5), (numpy_floats, 3), (numpy_floats, 5))):
        src = tmp_path / f"cap{i}.pkl"
        src.write_bytes(pickle.dumps(data, protocol=protocol))
        code, _, err = _convert(tmp_path, capsys, src, "--from", "fedscale-capacity", "--out", out)
        assert code == 0, err
        speeds = [float(r["samples_per_s"]) for r in table(out)]
        assert speeds == pytest.approx([1000 / (3 * v["computation"]) for v in CAPACITY.values()])


def test_a_tiny_period_is_refused_with_the_reason_not_unrolled_forever(tmp_path, capsys):
    """Issue 29, item 2: finish_time 1e-6 s over the default week is 6e11 window copies (it hung).  Alone in
    its file: exit 2 naming the file and the entry; beside a usable entry: skipped with the reason."""
    tiny = {"duration": 1, "active": [0.0], "inactive": [5e-7], "finish_time": 1e-6, "model": "x"}
    src = _pickle(tmp_path, "tiny", {9: tiny})
    code, _, err = _convert(tmp_path, capsys, src, "--from", "fedscale-behavior", "--out", tmp_path / "o.csv")
    assert code == 2 and "Traceback" not in err
    assert f"{src}: no usable fedscale-behavior entry (1 entries, e.g. 9: its 1 online window(s) repeat" in err
    assert "repeat every 1e-06 s, " in err
    assert "6.05e+11 window copies over --horizon 604800 s (at most 100,000 per entry" in err
    assert not (tmp_path / "o.csv").exists()
    src = _pickle(tmp_path, "mixed", {**BEHAVIOR, 9: tiny})
    out = ["--out", tmp_path / "o.csv", "--horizon", 220]
    code, _, err = _convert(tmp_path, capsys, src, "--from", "fedscale-behavior", *out)
    assert code == 0 and "2 usable fedscale-behavior entries (1 skipped)" in err and "skipped 9: its 1 online" in err
    assert [r["trace_key"] for r in table(tmp_path / "o.mapping.csv")] == ["3", "7"]


def test_unroll_bounds_its_work():
    # a whole period online is online throughout, whatever the period: one interval, no walk
    assert unroll([(0.0, 5e-7), (5e-7, 1e-6)], 1e-6, 604800.0) == [(0.0, 604800.0)]
    with pytest.raises(ValueError, match="repeat every 1e-06 s"):
        unroll([(0.0, 5e-7)], 1e-6, 604800.0)
    assert len(unroll([(0.0, 0.5)], 1.0, 99_998.0)) == 99_998  # (99,998 + 0.5) / 1 + 1 copies: within the bound
