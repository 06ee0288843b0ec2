"""server.selection: the registry and schema hook, ``uniform`` (today's rule), ``online`` (the check-in
model), the ClientFeedback the run loop hands the policies, and resume with a policy that reads it."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pytest
from conftest import events, run, scenario, table

from asyncfl.errors import ConfigError
from asyncfl.registry import register_object
from asyncfl.runner import start
from asyncfl.runner.simulation import Simulation
from asyncfl.sections import Section
from asyncfl.seeding import stream
from asyncfl.sim.selection import KINDS, ClientFeedback, SelectionKind, SelectionRequest, SelectionTags
from asyncfl.sim.selection.online import Online
from asyncfl.sim.selection.uniform import Uniform
from asyncfl.testing.selection import check_selection_kind
from tests.runner.test_resume import _kill_at_event, _same_results


class HighestLossSelection(Section):
    kind: Literal["highest_loss"] = "highest_loss"


class HighestLoss:
    """A test policy that reads feedback: the ``count`` candidates with the highest last loss, those
    never heard from first (NaN), ties by id; it remembers every request's feedback it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, list[float]]] = []

    def select(self, request: SelectionRequest) -> list[int]:
        loss = request.feedback.loss
        self.seen.append((request.version, loss.tolist()))
        ranked = sorted(
            request.candidates.tolist(), key=lambda i: (not math.isnan(loss[i]), -np.nan_to_num(loss[i]), i)
        )
        return sorted(ranked if request.count is None else ranked[: request.count])


BUILT: list[HighestLoss] = []


def _build(spec, num_clients, seed) -> HighestLoss:
    BUILT.append(HighestLoss())
    return BUILT[-1]


HIGHEST_LOSS = SelectionKind(
    section=HighestLossSelection,
    build=_build,
    summary="test: highest last loss first",
    tags=SelectionTags(needs_losses=True),
    examples=(("highest_loss", {"kind": "highest_loss"}),),
)


@pytest.fixture
def highest_loss():
    KINDS.register(HIGHEST_LOSS)
    BUILT.clear()
    yield HIGHEST_LOSS
    KINDS.unregister("highest_loss")


class Availability:
    def __init__(self, online: bool) -> None:
        self.is_online = online

    def online(self, t: float, rnd: int) -> bool:
        return self.is_online


class Device:
    def __init__(self, online: bool) -> None:
        self.availability, self.battery = Availability(online), None


def _request(online: list[bool], count, seed=7) -> SelectionRequest:
    n = len(online)
    clients = [Device(o) for o in online]
    rng = np.random.default_rng(seed)
    return SelectionRequest(0, 0.0, np.arange(n), count, rng, clients, ClientFeedback.empty(n))


# --- uniform and online, against hand-computed draws ------------------------------------------------


def test_uniform_is_the_old_sync_rule():
    """The old sync.py _select: idle[stream(seed, 'selection', rnd).choice(len(idle), M, replace=False)], sorted."""
    idle = np.array([0, 2, 3, 5, 8, 9, 11])
    for rnd in range(5):
        expected = sorted(idle[stream(4, "selection", rnd).choice(7, size=3, replace=False)].tolist())
        request = SelectionRequest(rnd, 0.0, idle, 3, stream(4, "selection", rnd), [], ClientFeedback.empty(0))
        assert Uniform().select(request) == expected
    request = SelectionRequest(0, 0.0, idle, None, None, [], ClientFeedback.empty(0))  # all: no draw at all
    assert Uniform().select(request) == idle.tolist()


def test_online_takes_every_online_client_when_fewer_than_asked():
    assert Online().select(_request([False, True, False, True, False], count=3)) == [1, 3]
    assert Online().select(_request([False] * 4, count=2)) == []


def test_online_draws_uniformly_among_the_online_ones():
    """Online clients 0, 2, 4; one asked: index rng.choice(3, 1) of [0, 2, 4], the same draw uniform makes."""
    index = int(np.random.default_rng(7).choice(3, size=1, replace=False)[0])
    assert Online().select(_request([True, False, True, False, True], count=1)) == [[0, 2, 4][index]]


def _markov(selection: dict) -> dict:
    return dict(
        timing_only=selection["kind"] in ("online", "uniform"),  # the ranking kinds need a full run
        data={"clients": 30},
        model={"name": "mlp", "hidden": 16},
        population={"availability": {"kind": "markov", "p": 0.5, "mean_cycle_s": 40}},
        server={"mode": "sync", "deadline_s": 5.0, "clients_per_round": 8, "selection": selection},
        stop={"rounds": 25},
        eval={"per_client": False},
        output={"plot": False},
    )


def _task_starts(run_dir) -> list[tuple[int, int, float]]:
    """(client, round, time) of every task's first event."""
    seen, out = set(), []
    for e in events(run_dir):
        if e.get("client") is not None and (e["client"], e["base_version"]) not in seen:
            seen.add((e["client"], e["base_version"]))
            out.append((e["client"], e["base_version"], e["t"]))
    return out


@pytest.mark.parametrize("kind", ["online", "oort", "power_of_choice", "tifl", "uniform"])
def test_online_never_asks_an_offline_client_and_uniform_does(tmp_path, kind):
    """Checked against the availability models themselves: each task's client at its round's start.
    The ranking policies (checked_in_only) choose among checked-in clients too, as FedScale's Oort does."""
    folder = tmp_path / kind
    folder.mkdir()
    simulation = Simulation(scenario(**_markov({"kind": kind})), folder)
    simulation.run()
    starts = {rnd: started for started, _, rnd in simulation.round_spans}  # exact (the files round)
    tasks = _task_starts(folder)
    assert len(tasks) > 60  # 25 rounds of up to 8 (TiFL asks one tier of the checked-in clients)
    offline = [(c, r) for c, r, t in tasks if not simulation.clients[c].availability.online(starts[r], r)]
    assert all(t == pytest.approx(starts[r], abs=1e-6) for _, r, t in tasks)  # at its round's start
    if kind != "uniform":
        assert offline == []
        assert not any(
            e.get("reason") == "offline" and e["t"] == pytest.approx(starts[e["base_version"]]) for e in events(folder)
        )
    else:
        assert len(offline) > 20  # p = 0.5: about half of the asked clients are offline


# --- the schema hook ---------------------------------------------------------------------------------


def test_default_is_uniform_and_unknown_kinds_list_the_allowed_ones():
    assert scenario().server.selection.kind == "uniform"
    with pytest.raises(ConfigError, match=r"server.selection.kind.*allowed: 'uniform', 'online'"):
        scenario(server={"selection": {"kind": "best"}})


def test_a_kind_in_a_mode_it_does_not_serve_is_refused_naming_both():
    with pytest.raises(ConfigError, match=r"online serves server.mode sync, but server.mode is k_async"):
        scenario(server={"mode": "k_async", "selection": {"kind": "online"}})


def test_a_loss_based_kind_is_refused_in_timing_only_runs(highest_loss):
    with pytest.raises(ConfigError, match=r"highest_loss ranks clients by their training losses.*timing_only"):
        scenario(timing_only=True, server={"selection": {"kind": "highest_loss"}})
    assert scenario(server={"selection": {"kind": "highest_loss"}}).server.selection.kind == "highest_loss"


def test_the_contract_catches_a_policy_that_returns_unsorted_ids():
    class Backwards(Uniform):
        def select(self, request):
            return sorted(super().select(request), reverse=True)

    class BackwardsSelection(Section):
        kind: Literal["backwards"] = "backwards"

    broken = SelectionKind(
        section=BackwardsSelection, build=lambda spec, n, seed: Backwards(), examples=(("b", {"kind": "backwards"}),)
    )
    with pytest.raises(AssertionError, match="not sorted and unique"):
        check_selection_kind(broken)


# --- feedback ---------------------------------------------------------------------------------------

TRANSFER = 0.5026  # as in test_timing.py: 8 Mbit/s links, 0.5 s latency, 2,600-byte logreg
COMPUTE = (0.16, 0.32, 1.6)  # 16 samples at 100, 50, 10 samples/s


def _three_clients(trace, selection: dict) -> dict:
    return dict(
        data={"dataset": "digits", "clients": 3},
        model={"name": "logreg"},
        training={"local_steps": 2, "batch_size": 8, "lr": 0.1},
        population={"device_trace": str(trace), "network": {"latency_s": 0.5}},
        server={"mode": "sync", "deadline_s": 2.0, "selection": selection},
        eval={"per_client": False},
        output={"plot": False},
        stop={"rounds": 3},
    )


def test_feedback_holds_each_aggregated_update(tmp_path, device_trace, highest_loss):
    """Deadline 2 s: clients 0 and 1 deliver every round (tasks of 2 * 0.5026 + 0.16 and + 0.32 s),
    client 2 (2.6052 s) never does: its loss columns stay NaN / -1, its duration is the 2 s it was seen to
    run before the deadline cut it."""
    trace = device_trace([(0, 100, 8, 8, 0.5), (1, 50, 8, 8, 0.5), (2, 10, 8, 8, 0.5)])
    simulation = Simulation(scenario(**_three_clients(trace, {"kind": "highest_loss"})), tmp_path)
    simulation.run()
    feedback = simulation.selection_feedback.feedback
    assert feedback.filled
    assert feedback.samples.tolist() == [len(i) for i in simulation.federation.client_train]
    assert feedback.last_version.tolist() == [2, 2, -1]
    assert feedback.duration_s[:2] == pytest.approx([2 * TRANSFER + COMPUTE[0], 2 * TRANSFER + COMPUTE[1]])
    # client 2 was cut by the 2 s deadline every round: the server saw it run at least 2 s (Oort's t_i)
    assert feedback.duration_s[2] == pytest.approx(2.0) and math.isnan(feedback.loss[2])
    assert [entry[6] for entry in simulation.selection_feedback.log] == [[(2, pytest.approx(2.0))]] * 3
    updates = [(int(u["round"]), int(u["client"])) for u in table(tmp_path / "updates.csv")]
    assert updates == [(v, c) for v in (1, 2, 3) for c in (0, 1)]
    assert np.isfinite(feedback.loss[:2]).all()
    # the policy saw, at round r, the losses of round r - 1's updates (NaN before the first)
    seen = BUILT[-1].seen
    assert [r for r, _ in seen] == [0, 1, 2]
    assert all(math.isnan(x) for x in seen[0][1])
    assert math.isfinite(seen[1][1][0]) and math.isfinite(seen[1][1][1]) and math.isnan(seen[1][1][2])
    assert seen[2][1][:2] == pytest.approx(seen[2][1][:2]) and seen[2][1][:2] != seen[1][1][:2]


def test_uniform_and_online_keep_no_feedback(tmp_path, device_trace):
    trace = device_trace([(0, 100, 8, 8, 0.5), (1, 50, 8, 8, 0.5), (2, 10, 8, 8, 0.5)])
    simulation = Simulation(scenario(**_three_clients(trace, {"kind": "online"})), tmp_path)
    simulation.run()
    assert simulation.selection_feedback.feedback is None and simulation.selection_feedback.log == []


def test_resume_with_a_feedback_policy_gives_identical_results(tmp_path, monkeypatch, highest_loss):
    """The policy's choices depend on the losses of earlier rounds: a resumed run replays the clock
    world with the feedback the checkpoint saved, so it chooses as the run that was never killed."""
    sections = dict(
        data={"dataset": "digits", "clients": 10, "partition": {"kind": "dirichlet", "alpha": 0.5}},
        model={"name": "logreg"},
        training={"local_steps": 3},
        population={"compute": {"samples_per_s": {"dist": "lognormal", "median": 40, "sigma": 0.8}}},
        server={"mode": "sync", "clients_per_round": 3, "selection": {"kind": "highest_loss"}},
        algorithm={"name": "fedavg", "record_weights": True},
        stop={"rounds": 9},
        checkpoint={"every_rounds": 2, "min_wall_s": 0},
        output={"plot": False},
    )
    s = scenario(**sections)
    reference = start.run_scenario(s, tmp_path / "reference")
    asked = [sorted(c for c, r, _ in _task_starts(reference) if r == rnd) for rnd in range(9)]
    assert asked[0] == [0, 1, 2] and asked[1] == [3, 4, 5] and asked[2] == [6, 7, 8]  # never heard from first
    assert 9 in asked[3] and len(asked[3]) == 3  # the last one never heard from, then two by loss
    total = sum('"event":"aggregate"' not in line for line in (reference / "events.jsonl").read_text().splitlines())
    for n in (total // 3, total - 4):
        run_dir = tmp_path / f"killed_at_{n}"
        assert _kill_at_event(monkeypatch, s, run_dir, n)
        start.resume_run(run_dir)
        _same_results(reference, run_dir)


def test_a_plugin_registration_is_routed_to_the_selection_registry(highest_loss):
    KINDS.unregister("highest_loss")  # the fixture registered it; a plug-in's entry point names the object
    register_object(HIGHEST_LOSS)
    assert KINDS["highest_loss"] is HIGHEST_LOSS and list(KINDS)[-1] == "highest_loss"


class LowestIdSelection(Section):
    kind: Literal["lowest_id"] = "lowest_id"


class LowestId(Uniform):
    """A test policy for K-async dispatch: always the smallest candidate ids."""

    def select(self, request: SelectionRequest) -> list[int]:
        ids = request.candidates.tolist()
        return ids if request.count is None else ids[: request.count]


LOWEST_ID = SelectionKind(
    section=LowestIdSelection,
    build=lambda spec, n, seed: LowestId(),
    tags=SelectionTags(modes=frozenset({"sync", "k_async"}), reads_feedback=False),
    examples=(("lowest_id", {"kind": "lowest_id"}),),
)


def test_k_async_dispatch_asks_a_policy_that_serves_it(tmp_path):
    """Always-online clients, 2 in flight: the policy always takes the lowest idle ids, and a client
    that has just delivered is idle again at once, so only clients 0 and 1 ever work."""
    KINDS.register(LOWEST_ID)
    try:
        run_dir = run(
            tmp_path,
            timing_only=True,
            data={"clients": 10},
            model={"name": "mlp", "hidden": 16},
            population={"compute": {"samples_per_s": {"dist": "lognormal", "median": 40, "sigma": 0.8}}},
            server={"mode": "k_async", "k": 2, "concurrency": 2, "selection": {"kind": "lowest_id"}},
            stop={"rounds": 10},
            eval={"per_client": False},
            output={"plot": False},
        )
    finally:
        KINDS.unregister("lowest_id")
    workers = {e["client"] for e in events(run_dir) if e.get("client") is not None}
    assert workers == {0, 1}
    assert len(table(run_dir / "rounds.csv")) == 10


def test_online_round_with_nobody_checked_in_waits_for_the_first_to_come_online(tmp_path, device_trace):
    """Clients 0, 1 online from t = 5, client 2 from t = 7 (no deadline; tasks of 1.1652, 1.3252 s).
    Round 0 at t = 0 asks nobody and closes at 5, when the first come online; round 1 asks 0 and 1 and
    closes at 5 + 1.3252 = 6.3252; round 2 (client 2 still offline) again 0 and 1, closing at 7.6504;
    round 3 asks all three."""
    trace = device_trace([(0, 100, 8, 8, 0.5), (1, 50, 8, 8, 0.5), (2, 10, 8, 8, 0.5)])
    online = tmp_path / "online.csv"
    online.write_text("client,start_s,end_s\n0,5,1000\n1,5,1000\n2,7,1000\n")
    sections = _three_clients(trace, {"kind": "online"})
    sections["server"].pop("deadline_s")
    sections["population"]["availability"] = {"kind": "trace", "file": str(online)}
    sections["stop"] = {"rounds": 4}
    run_dir = run(tmp_path, **sections)
    rounds = table(run_dir / "rounds.csv")
    close1 = 5 + 2 * TRANSFER + COMPUTE[1]
    expected = [0.0, 5.0, close1, close1 + 2 * TRANSFER + COMPUTE[1]]
    assert [float(r["started"]) for r in rounds] == pytest.approx(expected, abs=1e-6)
    assert [(r["selected"], r["received"], r["failed_offline"]) for r in rounds] == [
        ("0", "0", "0"), ("2", "2", "0"), ("2", "2", "0"), ("3", "3", "0"),
    ]  # fmt: skip


def test_a_kind_that_reads_accuracy_gets_every_clients_accuracy_at_each_evaluation(tmp_path, device_trace):
    """reads_accuracy (TiFL's tier accuracies): at every eval.every_rounds-th aggregation the run loop
    evaluates the global model on each client's test split into ClientFeedback.accuracy; at the last
    aggregation that is exactly the final model's client accuracies."""
    reading = SelectionKind(
        section=HighestLossSelection,
        build=_build,
        summary="test: reads accuracy",
        tags=SelectionTags(needs_losses=True, reads_accuracy=True),
        examples=(("highest_loss", {"kind": "highest_loss"}),),
    )
    KINDS.register(reading)
    try:
        trace = device_trace([(0, 100, 8, 8, 0.5), (1, 50, 8, 8, 0.5), (2, 10, 8, 8, 0.5)])
        sections = _three_clients(trace, {"kind": "highest_loss"})
        sections["stop"] = {"rounds": 4}
        sections["eval"] = {"per_client": False, "every_rounds": 2}
        simulation = Simulation(scenario(**sections), tmp_path)
        simulation.run()
    finally:
        KINDS.unregister("highest_loss")
    evaluated = [entry[0] for entry in simulation.selection_feedback.log if entry[5] is not None]
    assert evaluated == [1, 3]  # the aggregations that made versions 2 and 4
    final = simulation.learner.client_accuracies()
    assert np.isfinite(final).all()
    assert simulation.selection_feedback.feedback.accuracy.tolist() == pytest.approx(final)
