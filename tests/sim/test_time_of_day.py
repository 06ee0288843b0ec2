"""Time of day on the virtual clock (issue 14): the diurnal availability process, time zones,
production-style eligibility, presets, and where each client's virtual time went."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from asyncfl.config import ConfigError
from asyncfl.config.loading import validate_scenario
from asyncfl.output.reading import read_csv
from asyncfl.runner.start import run_scenario
from asyncfl.sim import availability as av
from asyncfl.sim.availability.measure import OfflineMeter
from asyncfl.sim.clients import ClientDevice, Work, plan_task
from asyncfl.sim.population import build_clients
from asyncfl.sim.profiles import DeviceProfile

INF = math.inf
SINE = [1 + 0.8 * math.cos(2 * math.pi * (h + 0.5 - 20) / 24) for h in range(24)]


class ScriptedRng:
    """Hands out given numbers (the diurnal process asks for blocks: the script comes first, then
    padding that ends every hold and keeps every state), so the path can be computed by hand."""

    def __init__(self, uniforms, exponentials):
        self.uniforms, self.exponentials = list(uniforms), list(exponentials)

    def random(self, size):
        out, self.uniforms = (self.uniforms + [0.5] * size)[:size], self.uniforms[size:]
        return np.array(out)

    def standard_exponential(self, size):
        out, self.exponentials = (self.exponentials + [1e9] * size)[:size], self.exponentials[size:]
        return np.array(out)


def test_diurnal_switch_times_by_hand_within_an_hour():
    # pi = 0.5 in every hour, cycle 4 s: mean online and offline periods 2 s, so a hold is 2 x the
    # standard exponential given.  Local time 0 at t = 0.  First state: u = 0.1 < 0.5, online.  Hour 0:
    # holds of 1000 (-> offline at 1000), 500 (-> online at 1500), 5000 (past the hour's end at 3600:
    # cut).  Boundary: online stays online with probability min(1, 0.5 / 0.5) = 1 (u = 0.9).  Hour 1:
    # hold 4000 (past 7200), boundary u = 0.2; hour 2: hold 100 -> offline at 7300 ...
    rng = ScriptedRng([0.1, 0.9, 0.2, 0.3], [500.0, 250.0, 2500.0, 2000.0, 50.0, 4500.0])
    m = av.Diurnal(0.5, [0.5] * 24, 4.0, 0.0, rng)
    assert m.online(0.0, 0) and m.next_offline(0.0, 0) == 1000.0
    assert not m.online(1000.0, 0) and m.next_online(1000.0) == 1500.0 and m.next_offline(1200.0, 0) == 1200.0
    assert m.online(1500.0, 0) and m.next_offline(1500.0, 0) == 7300.0  # no flip at 3600 (coupling kept it)
    assert not m.online(7300.0, 0) and m.online(7299.0, 0)


def test_diurnal_hour_boundaries_follow_local_time():
    # Online hours 0..5 only (pi = 1 there, 0 elsewhere: the path is deterministic).  The client's local
    # time at t = 0 is 02:30, so it is online from t = 0 until local 06:00 = 12,600 s, offline until
    # local midnight (t = 77,400 s), online again until t = 99,000 s.
    pis = av.hourly_probabilities(0.25, [4.0] * 6 + [0.0] * 18)
    assert pis == [1.0] * 6 + [0.0] * 18
    m = av.Diurnal(0.25, pis, 1800.0, 2.5 * 3600, np.random.default_rng(0))
    assert m.online(0.0, 0) and m.next_offline(0.0, 0) == 12600.0
    assert not m.online(12600.0, 0) and m.next_online(12600.0) == 77400.0
    assert m.next_offline(77400.0, 0) == 99000.0
    assert m.next_online(5000.0) == 5000.0


def test_hourly_probabilities_mean_is_p_even_when_hours_saturate():
    for p in (0.05, 0.3, 0.55, 0.6, 0.9, 0.99):
        pis = av.hourly_probabilities(p, SINE)
        assert max(pis) <= 1.0 and min(pis) >= 0.0
        assert np.mean(pis) == pytest.approx(p, abs=1e-12)
    assert av.hourly_probabilities(0.9, SINE).count(1.0) > 0  # 0.9 x 1.8 > 1: the evening saturates


@pytest.mark.parametrize("p", [0.1, 0.45, 0.85])
def test_diurnal_long_run_online_fraction_is_p(p):
    m = av.Diurnal(p, av.hourly_probabilities(p, SINE), 1800.0, 3 * 3600 + 600, np.random.default_rng(7))
    days = 300
    online = 1 - m.offline_seconds(days * 86400.0) / (days * 86400.0)
    assert online == pytest.approx(p, abs=0.015)


def test_diurnal_p_zero_and_one():
    never = av.Diurnal(0.0, av.hourly_probabilities(0.0, SINE), 600.0, 0.0, np.random.default_rng(1))
    always = av.Diurnal(1.0, av.hourly_probabilities(1.0, SINE), 600.0, 0.0, np.random.default_rng(1))
    for t in np.linspace(0, 5 * 86400, 97):
        assert not never.online(t, 0) and never.next_online(t) == INF and never.next_offline(t, 0) == t
        assert always.online(t, 0) and always.next_offline(t, 0) == INF and always.next_online(t) == t
    assert never.switches == [0.0] and always.switches == [0.0]


def _population(**availability):
    return validate_scenario(
        {
            "population": {
                "availability": {"kind": "diurnal", **availability},
                "timezones": [{"share": 0.5, "offset": 0}, {"share": 0.5, "offset": 6}],
            }
        }  # fmt: skip
    ).population


def test_time_zone_offsets_shift_the_wave():
    population = _population(p=0.4, amplitude=1.0, peak_hour=18)
    clients = build_clients(population, 600, seed=3)
    from asyncfl.sim.population import utc_offsets

    offsets = np.array(utc_offsets(population.timezones, 600, 3))
    assert set(offsets) == {0.0, 6.0}
    hours = np.arange(0, 4 * 86400, 900.0)
    online = np.array([[clients[i].availability.online(t, 0) for t in hours] for i in range(600)], dtype=float)
    by_hour = lambda rows: np.array([rows[:, (hours // 3600 % 24) == h].mean() for h in range(24)])  # noqa: E731
    utc0, utc6 = by_hour(online[offsets == 0]), by_hour(online[offsets == 6])
    # local 18:00 peak: 18:00 UTC for offset 0, 12:00 UTC for offset +6 (within an hour)
    assert abs(int(np.argmax(utc0)) - 17.5) <= 1.5 and abs(int(np.argmax(utc6)) - 11.5) <= 1.5
    assert utc0.mean() == pytest.approx(0.4, abs=0.05) and utc6.mean() == pytest.approx(0.4, abs=0.05)
    # the start time moves everybody's clock: starting at 06:00 UTC is the same as offset +6
    later = build_clients(_population(p=0.4, amplitude=1.0, peak_hour=18), 600, seed=3, start_s_of_day=6 * 3600)
    shifted = np.array([[later[i].availability.online(t, 0) for t in hours] for i in range(600)], dtype=float)
    assert abs(int(np.argmax(by_hour(shifted[offsets == 0]))) - 11.5) <= 1.5


def _device(availability) -> ClientDevice:
    return ClientDevice(0, DeviceProfile(10.0, 1e6, 1e6, 0.0), availability, np.random.default_rng(0))


def test_task_lost_when_eligibility_ends_mid_task():
    work = Work(local_steps=10, batch_size=10, model_bytes=1_000_000)  # 1 s down, 10 s compute, 1 s up
    wifi = av.Trace([(0.0, 5.0), (20.0, 100.0)])
    client = _device(av.AllOf([av.Always(), wifi], ["offline", "network"]))
    plan = plan_task(client, work, 0.0, 0)
    assert (plan.failure, plan.end) == ("network", 5.0)
    assert client.stats.compute_s == pytest.approx(4.0) and client.stats.download_s == pytest.approx(1.0)
    late = plan_task(client, work, 10.0, 1)  # not on Wi-Fi at the start
    assert (late.failure, late.end) == ("network", 10.0)
    ok = plan_task(client, work, 20.0, 2)
    assert ok.delivered and ok.end == pytest.approx(32.0)
    plugged = av.Cyclic(0.5, 20.0, 0.0)  # plugged in on [0, 10) of every 20 s
    client = _device(av.AllOf([av.Always(), plugged, wifi], ["offline", "charging", "network"]))
    assert plan_task(client, work, 0.0, 0).failure == "network"  # Wi-Fi ends at 5 before the plug at 10
    unplugged = plan_task(client, work, 22.0, 1)
    assert (unplugged.failure, unplugged.end) == ("charging", 30.0)
    assert client.availability.next_online(30.0) == 40.0  # plugged again and on Wi-Fi


ELIGIBLE = {
    "name": "eligible",
    "timing_only": True,
    "clock": {"start_time": "2026-01-05T22:00"},
    "data": {"dataset": "digits", "clients": 40},
    "model": {"name": "mlp", "hidden": 50},
    "training": {"local_steps": 10},
    "population": {
        "compute": {"samples_per_s": {"dist": "lognormal", "median": 8, "sigma": 0.5}},
        "availability": {"kind": "diurnal", "p": 0.6, "mean_cycle_s": 900},
        "timezones": {"dist": "uniform", "low": -8, "high": 8},
        "battery": {"capacity_j": 1e6, "charging": {"period_s": 7200, "plugged_fraction": 0.7}},
        "eligibility": {"charging": True, "unmetered": {"kind": "markov", "p": 0.8, "mean_cycle_s": 300}},
    },
    "server": {"clients_per_round": 10, "deadline_s": 120},
    "stop": {"virtual_time_s": 4 * 3600},
    "output": {"plot": False},
}


@pytest.mark.parametrize(
    "server", [{"clients_per_round": 10, "deadline_s": 120}, {"mode": "k_async", "k": 3, "concurrency": 6}]
)
def test_eligibility_failures_are_recorded_everywhere(tmp_path, server):
    run = run_scenario(validate_scenario({**ELIGIBLE, "server": server}), tmp_path / "run")
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    rounds, clients = read_csv(run / "rounds.csv"), read_csv(run / "clients.csv")
    for reason in ("charging", "network"):
        in_events = sum(1 for e in events if e["event"] == "fail" and e.get("reason") == reason)
        in_rounds = sum(int(r[f"failed_{reason}"]) for r in rounds)
        in_clients = sum(int(c[f"failed_{reason}"]) for c in clients)
        assert in_events > 0 and in_clients == in_events and in_rounds <= in_events  # rounds: those counted by a close
    mid_task = [e for e in events if e["event"] == "fail" and e.get("reason") in ("charging", "network")]
    assert any(float(r["lost_s"]) > 0 for r in rounds) and mid_task
    metrics = read_csv(run / "metrics.csv")
    assert metrics[0]["utc_time"] == "2026-01-05T22:00:00" and metrics[-1]["utc_time"].startswith("2026-01-06T0")
    assert "utc_offset_h" in clients[0]


def _breakdown_ok(run) -> float:
    summary = json.loads((run / "summary.json").read_text())
    length = summary["virtual_time_s"]
    for row in read_csv(run / "clients.csv"):
        parts = [float(row[k]) for k in ("download_s", "compute_s", "upload_s", "idle_s", "offline_s")]
        assert sum(parts) == pytest.approx(length, abs=1e-5)
        assert min(parts) >= -1e-6
    return length


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"server": {"mode": "k_async", "k": 3, "concurrency": 6}},
        {"population": {"availability": {"kind": "bernoulli", "p": 0.5}}, "stop": {"rounds": 30}},
        {
            "population": {"availability": {"kind": "markov", "p": 0.5, "mean_cycle_rounds": 4}},
            "server": {"deadline_s": 30, "late_updates": "next_round"},
            "stop": {"rounds": 30},
        },
        {"population": {"availability": {"kind": "cyclic", "p": 0.5, "period_s": 900}}},
        {
            "population": {"availability": {"kind": "bernoulli", "p": 0.5, "slot_s": 70}},
            "server": {"mode": "k_async", "k": 3, "concurrency": 6},
        },
    ],
)
def test_time_breakdown_adds_up_to_the_run_length(tmp_path, changes):
    raw = {**ELIGIBLE, "clock": {}, **changes}
    if "population" not in changes:
        raw["population"] = {k: v for k, v in ELIGIBLE["population"].items() if k != "eligibility"}
    else:
        raw["population"] = {"compute": ELIGIBLE["population"]["compute"], **changes["population"]}
    if "stop" not in changes:
        raw["stop"] = {"virtual_time_s": 3 * 3600}
    run = run_scenario(validate_scenario(raw), tmp_path / "run")
    assert _breakdown_ok(run) > 0
    rows = read_csv(run / "clients.csv")
    assert sum(float(r["offline_s"]) for r in rows) > 0 and sum(float(r["compute_s"]) for r in rows) > 0


def test_time_breakdown_by_hand(tmp_path):
    # one always-online client, constant speed: every round is download + compute + upload back to back
    raw = {
        "timing_only": True, "data": {"dataset": "digits", "clients": 1}, "model": {"name": "logreg"},
        "training": {"local_steps": 4, "batch_size": 10},
        "population": {"compute": {"samples_per_s": 20}, "network": {"latency_s": 0.5}},
        "stop": {"rounds": 3}, "output": {"plot": False},
    }  # fmt: skip
    run = run_scenario(validate_scenario(raw), tmp_path / "run")
    (row,) = read_csv(run / "clients.csv")
    assert float(row["compute_s"]) == pytest.approx(3 * 4 * 10 / 20)
    assert float(row["idle_s"]) == pytest.approx(0.0, abs=1e-6) and float(row["offline_s"]) == 0.0
    assert _breakdown_ok(run) == pytest.approx(float(row["download_s"]) + 6.0 + float(row["upload_s"]))
    rounds = read_csv(run / "rounds.csv")
    assert float(rounds[0]["wait_slowest_s"]) == pytest.approx(float(rounds[0]["time"]) - float(rounds[0]["started"]))
    assert all(float(r["lost_s"]) == 0 for r in rounds)


def test_offline_meter_counts_slots_like_the_walk_does():
    model = av.Bernoulli(0.4, np.random.default_rng(3), 60.0)
    meter = OfflineMeter(10_000.5, [])
    walked, t = 0.0, 0.0
    while t < 10_000.5:
        if model.online(t, 0):
            t = model.next_offline(t, 0)
        else:
            nxt = model.next_online(t)
            walked, t = walked + min(nxt, 10_000.5) - t, nxt
    assert meter(model) == pytest.approx(walked, abs=1e-9) and 4000 < walked < 8000


def test_offline_meter_round_indexed_skips_busy_late_tasks():
    # three rounds of 10 s; the client is offline in round 1 (phase 1: (1 + 1) % 3 >= 2 on-rounds) but
    # busy there with a late task of round 0 until 15 s: offline 5 s, not 10
    model = av.CyclicRounds(2 / 3, 3, 1)
    assert [model.online(0, r) for r in range(3)] == [True, False, True]
    meter = OfflineMeter(30.0, [(0.0, 10.0, 0), (10.0, 20.0, 1), (20.0, 30.0, 2)])
    assert meter(model, []) == 10.0 and meter(model, [(10.0, 15.0)]) == 5.0


def test_presets_fill_keys_and_yield_to_the_scenario_key_by_key():
    s = validate_scenario({"population": {"preset": "flash_network", "network": {"latency_s": 0.3}}})
    net = s.population.network
    assert net.latency_s.value == 0.3 and net.uplink_mbps.dist == "lognormal"
    assert net.downlink_mbps.median == pytest.approx(math.sqrt(2370 * 17333) / 1000, rel=1e-3)
    s = validate_scenario({"population": {"preset": "flash_network", "network": {"uplink_mbps": {"sigma": 0.1}}}})
    assert s.population.network.uplink_mbps.sigma == 0.1 and s.population.network.uplink_mbps.median > 1
    s = validate_scenario({"population": {"preset": "flgo_daily", "availability": {"p": 0.2}}})
    a = s.population.availability
    assert (
        a.kind == "diurnal"
        and a.p.value == 0.2
        and a.hourly[6] == pytest.approx(0.4 * math.sin(12 * math.pi / 23) + 0.5)
    )
    s = validate_scenario(
        {"population": {"preset": "flgo_daily", "availability": {"kind": "markov", "mean_cycle_s": 60}}}
    )
    assert s.population.availability.kind == "markov"  # another kind replaces the preset's section whole
    s = validate_scenario({"population": {"preset": ["fedscale_like", "flash_network"]}})
    assert (
        s.population.compute.samples_per_s.dist == "lognormal" and s.population.network.uplink_mbps.dist == "lognormal"
    )
    # a run's config.yaml (preset + resolved keys) reads back to the same scenario
    again = validate_scenario(s.model_dump(mode="json"))
    assert again == s


@pytest.mark.parametrize(
    "population, clock, needle",
    [
        ({"preset": "fedscale"}, {}, "population.preset"),
        ({"timezones": -5}, {}, "only diurnal processes"),
        ({"timezones": [{"share": 0.5, "offset": 1}], "availability": {"kind": "diurnal"}}, {}, "sum to 1"),
        ({"timezones": 20, "availability": {"kind": "diurnal"}}, {}, "[-12, 14]"),
        ({"availability": {"kind": "diurnal", "hourly": [1] * 23}}, {}, "24 weights"),
        ({"availability": {"kind": "diurnal", "hourly": [1] * 24, "amplitude": 0.3}}, {}, "not both"),
        ({"eligibility": {"charging": True}}, {}, "population.battery.charging"),
        ({"eligibility": {}}, {}, "requires nothing"),
        ({"eligibility": {"unmetered": {"kind": "bernoulli", "p": 0.5}}}, {}, "slot_s"),
        ({}, {"start_time": "Monday morning"}, "clock.start_time"),
        (
            {
                "availability": {"kind": "bernoulli", "p": 0.5},
                "eligibility": {"unmetered": {"kind": "markov", "mean_cycle_s": 9}},
            },
            {},
            "counts sync rounds",
        ),
    ],
)
def test_bad_time_of_day_input_names_the_yaml_path(population, clock, needle):
    with pytest.raises(ConfigError) as err:
        validate_scenario({"population": population, "clock": clock})
    assert needle in str(err.value)


def test_unreachable_p_for_a_sparse_hourly_table_is_refused(tmp_path):
    raw = {**ELIGIBLE, "population": {"availability": {"kind": "diurnal", "p": 0.5, "hourly": [1] * 6 + [0] * 18}}}
    with pytest.raises(ConfigError, match="population.availability.p"):
        run_scenario(validate_scenario(raw), tmp_path / "run")


def test_diurnal_runs_are_deterministic(tmp_path):
    a = run_scenario(validate_scenario(ELIGIBLE), tmp_path / "a")
    b = run_scenario(validate_scenario(ELIGIBLE), tmp_path / "b")
    for name in ("events.jsonl", "rounds.csv", "clients.csv"):
        assert (a / name).read_text() == (b / name).read_text()


def test_figures_show_time_of_day_and_the_breakdown(tmp_path):
    import matplotlib.pyplot as plt

    from asyncfl.figures.accuracy import plot_accuracy_vs_time
    from asyncfl.figures.time_breakdown import draw_time_breakdown
    from asyncfl.figures.timeline import draw_timeline
    from asyncfl.figures.timezones import draw_timezones

    run = run_scenario(validate_scenario(ELIGIBLE), tmp_path / "run")
    fig = draw_timezones(run)
    ax = fig.axes[0]
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert labels[0].startswith("22:00") and any(label.startswith("00:00\nTue") for label in labels)
    assert "UTC" in ax.get_xlabel() and len(ax.get_legend().get_texts()) >= 2
    plt.close(fig)
    fig = draw_timeline(run)
    fig.canvas.draw()
    assert ":" in fig.axes[0].get_xticklabels()[0].get_text() and "time of day" in fig.axes[0].get_xlabel()
    plt.close(fig)
    fig = draw_time_breakdown(run)
    ax = fig.axes[0]
    stacked = {}  # the five shares of every speed group add up to 1 (the columns add up to the run length)
    for bar in ax.patches:
        stacked[round(bar.get_x(), 6)] = stacked.get(round(bar.get_x(), 6), 0.0) + bar.get_height()
    assert len(stacked) == 5 and all(v == pytest.approx(1.0, abs=1e-6) for v in stacked.values())
    plt.close(fig)
    assert plot_accuracy_vs_time(run).name == "updates_vs_time.png"  # timing only


def test_a_diurnal_unmetered_network_follows_local_time():
    # on Wi-Fi exactly during local hours 0..11 (pi = 1 there, 0 elsewhere); everybody at UTC+6, so
    # eligible from 18:00 to 06:00 UTC
    population = validate_scenario({"population": {
        "timezones": 6,
        "eligibility": {"unmetered": {"kind": "diurnal", "p": 0.5, "hourly": [1] * 12 + [0] * 12}},
    }}).population  # fmt: skip
    clients = build_clients(population, 3, seed=0)
    for hour in range(48):
        t = hour * 3600 + 1800.0
        expected = (hour % 24) >= 18 or (hour % 24) < 6
        assert all(clients[i].availability.online(t, 0) == expected for i in range(3)), hour
    model = clients[0].availability
    assert model.why_not(12 * 3600.0, 0) == "network" and model.next_online(7 * 3600.0) == 18 * 3600.0
    assert model.next_cut(0.0, 0) == (6 * 3600.0, "network")
