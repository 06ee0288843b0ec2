"""A Flower run from its front doors (:func:`asyncfl.flower.run`, ``python -m asyncfl flower``): the scenario's
population as the nodes of a :class:`~asyncfl.flower.grid.VirtualGrid`, the user's ServerApp run against it,
and a run directory written by the native callbacks (:mod:`asyncfl.flower.recording`).

What of the scenario a Flower run reads: ``data.clients`` (the number of nodes; the ClientApp loads its own data
by ``partition-id``), ``population`` (speeds, links, availability, battery, eligibility, time zones), ``clock``,
``stop`` (``rounds`` and ``virtual_time_s`` end the run at the next train round; ``target_accuracy`` at the next
one after an evaluation, federated or on the server, reaches it: the Grid then answers the app's remaining rounds
with no reply, at once, so that ``Strategy.start`` returns and the app's code after it runs; summary.json's
``stopped_by`` names the rule), ``eval.per_client`` (clients.csv's accuracy from the evaluate replies), ``output``,
``seed`` and ``flower``.  The ServerApp decides the rest (rounds, sampling, deadlines: a strategy's ``timeout`` is
the virtual deadline).  A ServerApp's run writes no checkpoint (its state is the ServerApp's, user code that asyncfl
can neither save nor restore; docs/how-to/flower.md): ``--resume`` refuses it.  A K-async run (no ServerApp,
:mod:`asyncfl.flower.k_async`) checkpoints and resumes (:mod:`asyncfl.flower.resume`).

Determinism: Python's ``random`` (Flower's ``sample_nodes`` draws from it), numpy's and torch's global generators
are seeded from ``seed`` (its ``flower`` stream) while the apps run and restored afterwards: user code draws from
them, so this is the one place asyncfl seeds a global generator.  The same seed gives the same events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import simpy
import torch
from flwr.app import Context, RecordDict

from asyncfl.config.clock import start_datetime
from asyncfl.config.flower import Flower, check_k_async_flower
from asyncfl.config.schema import Scenario
from asyncfl.config.yaml_files import flower_run_config, override_list, path_argument
from asyncfl.errors import ConfigError
from asyncfl.flower.app_folder import AppFolder, fused_run_config, on_sys_path, read_app_folder
from asyncfl.flower.apps import flwr_log, load_app
from asyncfl.flower.generators import apps_seeded, flower_seeds
from asyncfl.flower.grid import VirtualGrid
from asyncfl.flower.k_async import run_k_async
from asyncfl.flower.node_config import node_configs
from asyncfl.flower.nodes import FlowerNodes
from asyncfl.flower.recording import EvaluationMetrics, FlowerLearner, FlowerRecorder, ServerSide, expected_rounds
from asyncfl.flower.server_side import watching_start
from asyncfl.flower.threads import ordered_app
from asyncfl.learn.datasets import dataset_spec
from asyncfl.output.run_directory import refuse_used_out
from asyncfl.results import Run, read_run
from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.callbacks.end_of_run import end_of_run
from asyncfl.runner.callbacks.progress_bar import ProgressBar
from asyncfl.runner.callbacks.round_log import RoundLog
from asyncfl.runner.callbacks.stop_rules import StopRules
from asyncfl.runner.parts import (
    added_failure_reasons,
    clusters_of,
    machine_description,
    run_directory,
    seconds_of_day,
    task_work,
    utc_time,
)
from asyncfl.runner.run_end import end_callbacks, run_end
from asyncfl.runner.simulation import run_loop
from asyncfl.runner.start import start_in_directory
from asyncfl.sim.population import build_clients, participation_probabilities
from asyncfl.sim.servers import RoundHandoff

SERVER_WHERE, CLIENT_WHERE = "flower.server_app", "flower.client_app"


def flower_scenario(scenario: Any, overrides: Iterable[str] = (), run_config: Mapping | None = None) -> Scenario:
    """The scenario of a Flower run (a path, a dict of keys or a Scenario), with ``run_config`` in place of
    ``flower.run_config``; ``overrides`` and ``run_config`` are checked as ``asyncfl.run`` checks its arguments
    (one ``'key=value'`` str is refused, not read a character at a time)."""
    overrides = override_list(overrides)
    run_config = None if run_config is None else flower_run_config(run_config)
    if isinstance(scenario, Scenario):
        chosen = Scenario.from_dict(scenario.model_dump(mode="json"), overrides) if overrides else scenario
    elif isinstance(scenario, Mapping):
        chosen = Scenario.from_dict(scenario, overrides)
    else:
        chosen = Scenario.from_yaml(scenario, overrides)
    if run_config is not None:
        flower = (chosen.flower or Flower()).model_copy(update={"run_config": run_config})
        chosen = chosen.model_copy(update={"flower": flower})
    return chosen


def run_flower(
    server_app: Any,
    client_app: Any,
    scenario: Any,
    out_dir: str | Path | None = None,
    *,
    overrides: Iterable[str] = (),
    run_config: Mapping | None = None,
    app_dir: str | Path | None = None,
    quiet: bool = True,
    where: tuple[str, str] = ("server_app", "client_app"),
    run_config_where: str = "run_config",
    announce: Callable[[Path], None] | None = None,
) -> Run:
    """:func:`asyncfl.flower.run`; ``where``: how the caller names the two apps in its errors (the argument
    names, or the command's flags), ``run_config_where`` the run config; ``announce(run_dir)``: called once the
    run directory is held.  ``app_dir``: a Flower app folder (:mod:`asyncfl.flower.app_folder`): its
    ``pyproject.toml`` names the apps, and ``run_config`` is fused over its defaults and ``flower.run_config``."""
    out_dir = path_argument(out_dir, "out_dir")
    if app_dir is None:
        s = flower_scenario(scenario, overrides, run_config)
        return _run_flower(server_app, client_app, s, out_dir, quiet, where, announce)
    app = read_app_folder(path_argument(app_dir, "app_dir"))
    for given, named in ((server_app, where[0]), (client_app, where[1])):
        if given is not None:
            raise ConfigError(
                f"{named}: the app folder {app.path} names the apps ({app.pyproject}'s [tool.flwr.app.components]); "
                f"allowed: an app folder or {where[0]} and {where[1]}, not both"
            )
    s = flower_scenario(scenario, overrides)
    s = app_folder_scenario(app, s, {} if run_config is None else flower_run_config(run_config), run_config_where)
    flower = s.flower or Flower()
    components = f"{app.pyproject}: [tool.flwr.app.components]"
    with on_sys_path(app.path):  # as Flower's load_app: the app's own packages import
        return _run_flower(
            flower.server_app, flower.client_app, s, out_dir, quiet,
            (f"{components} serverapp", f"{components} clientapp"), announce,
        )  # fmt: skip


def app_folder_scenario(app: AppFolder, s: Scenario, run_config: Mapping, run_config_where: str) -> Scenario:
    """``s`` running ``app``: its ``flower:`` section names the folder's apps (a K-async run: its ClientApp only)
    and holds the run config the app gets, ``app.config`` < ``flower.run_config`` < ``run_config``."""
    flower = s.flower or Flower()
    fused = fused_run_config(app, ("flower.run_config", flower.run_config), (run_config_where, run_config))
    server_app = None if s.server.mode == "k_async" else app.server_app  # K-async: asyncfl's server, no ServerApp
    update = {"server_app": server_app, "client_app": app.client_app, "run_config": fused}
    return s.model_copy(update={"flower": flower.model_copy(update=update)})


def _run_flower(
    server_app: Any,
    client_app: Any,
    s: Scenario,
    out_dir: Path | None,
    quiet: bool,
    where: tuple[str, str],
    announce: Callable[[Path], None] | None,
) -> Run:
    flower = s.flower or Flower()
    k_async = s.server.mode == "k_async"  # asyncfl's K-async server, the ClientApp its trainer: no ServerApp
    if k_async and server_app is not None:
        raise ConfigError(f"{where[0]}: a K-async run (server.mode: k_async) has no ServerApp; allowed: none")
    if k_async:
        server = None
    elif server_app is not None:
        server = load_app(server_app, "server", where[0])
    else:
        server = _named(flower.server_app, "server")
    client = load_app(client_app, "client", where[1]) if client_app is not None else _named(flower.client_app, "client")
    specs = {k: v for k, v in (("server_app", server_app), ("client_app", client_app)) if isinstance(v, str)}
    s = s.model_copy(update={"flower": flower.model_copy(update=specs)})
    if out_dir is not None:
        refuse_used_out(out_dir, "refusing to overwrite a run.")
    if k_async:
        check_k_async_flower(s)  # the section as the flags left it
    with flwr_log(quiet):
        if k_async:
            return read_run(run_k_async(client, s, out_dir, quiet, announce=announce))
        session = lambda run_dir: FlowerSession(s, run_dir, server, client, quiet)  # noqa: E731
        return read_run(start_in_directory(s, out_dir, announce, session))


def _named(spec: str | None, kind: str) -> Any:
    where = SERVER_WHERE if kind == "server" else CLIENT_WHERE
    if spec is None:
        flag = f"--{kind}-app"
        raise ConfigError(f"{where}: no {kind.title()}App is named; allowed: 'package.module:attribute' here or {flag}")
    return load_app(spec, kind, where)  # type: ignore[arg-type]


class FlowerSession:
    """One Flower run: the population, the nodes, the Grid, the run directory and its callbacks."""

    def __init__(self, s: Scenario, run_dir: Path, server_app: Any, client_app: Any, quiet: bool) -> None:
        self.server_app = server_app
        flower = s.flower or Flower()
        self.scenario, n = s, s.data.clients
        start = start_datetime(s.clock.start_time) if s.clock.start_time else None
        self.clients = build_clients(s.population, n, s.seed, None, clusters_of(s), seconds_of_day(start))
        probabilities = participation_probabilities(s.population.availability, n, s.seed, None)
        reasons = added_failure_reasons(s) + ["client_app"]
        classes = dataset_spec(s.data)[1]
        self.out = run_directory(s, run_dir, self.clients, None, classes, start, reasons)
        self.run_id, self.app_seed = flower_seeds(s.seed)
        self.nodes = FlowerNodes(client_app, n, self.run_id, flower.run_config, flower.work, node_configs(s))
        self.learner = FlowerLearner(n)
        self.round_spans: list = []
        self.state = RunState()
        stop_rules = StopRules(s.stop)
        clock = (lambda now: {"utc_time": utc_time(start, now)}) if start is not None else None
        keys = flower.metrics
        self.metrics = EvaluationMetrics(self.out, stop_rules, (keys.central_accuracy, keys.central_loss), clock)
        device = torch.device("cpu")
        # the ServerApp's strategy aggregates, not asyncfl's algorithm.name (which asyncfl cannot see inside it)
        rule = f"flower ServerApp {flower.server_app}" if flower.server_app else "flower ServerApp"
        ends = end_of_run(
            s, self.out, self.clients, probabilities, self.learner, device, self.round_spans, reasons, rule,
            machine_description(),
        )  # fmt: skip
        self.callbacks = [
            RoundLog(self.out, reasons),
            self.metrics,
            stop_rules,
            ProgressBar(expected_rounds(s.stop.rounds, flower.run_config), quiet),
        ]
        self.ends = ends
        recorder = FlowerRecorder(
            self.nodes, flower.metrics, self.state, self.callbacks, self.metrics, self.learner, self.round_spans
        )
        self.recorder = recorder
        work = task_work(s, 0)  # the battery's energy per sample and per byte
        # the run loop, a process of the Grid's clock: the Grid hands it each trip as a native server does
        env = simpy.Environment()
        rounds = RoundHandoff(env)
        env.process(run_loop(env, rounds, recorder))
        self.grid = VirtualGrid(
            self.nodes, self.clients, work, self.out.event, self.run_id, env, rounds, self._stop,
            timed_evaluation=flower.evaluation != "untimed", offline_grace_s=flower.offline_grace_s,
            start_s=start.timestamp() if start is not None else 0.0,
        )  # fmt: skip

    def _stop(self) -> bool:
        return self.state.stop

    def run(self) -> None:
        """Run the ServerApp to its end (or the scenario's stop), then write the end-of-run files: whatever ends
        it (the ServerApp raising, a ConfigError from the Grid, Ctrl-C), summary.json says how
        (:func:`asyncfl.runner.run_end.run_end`) and the exception is raised again."""
        server_app = self.server_app
        s = self.scenario
        context = Context(
            run_id=self.run_id, node_id=0, node_config={}, state=RecordDict(),
            run_config=dict((s.flower or Flower()).run_config),
        )  # fmt: skip
        with run_end(self.state, self.out.path, self._finish):
            for callback in self.callbacks + self.ends:
                callback.on_start(self.state)
            server_side = ServerSide(self.grid, self.state, self.metrics, self.learner)
            with apps_seeded(self.app_seed), watching_start(self.grid, server_side), self.recorder.guarded():
                ordered_app(server_app, self.grid)(grid=self.grid, context=context)  # legacy: flower.threads
            self.state.stopped_by = self._stopped_by()

    def _stopped_by(self) -> str:
        """summary.json's ``stopped_by`` of a run whose ServerApp returned: the stop rule that fired (its YAML
        path, or ``diverged``), else ``server_app`` (it ended its rounds by itself)."""
        progress, stop = self.state.progress, self.scenario.stop
        if not self.state.stop:
            return "server_app"
        if progress.status == "diverged":
            return "diverged"
        if progress.status == "target_reached":
            return "stop.target_accuracy"
        return "stop.rounds" if stop.rounds is not None and progress.rounds >= stop.rounds else "stop.virtual_time_s"

    def _finish(self) -> None:
        now = self.grid.env.now
        end_callbacks(self.state, now, [CloseGrid(self), *self.callbacks, *self.ends], self.out)


class CloseGrid(Callback):
    """First at the end of a Flower run: the Grid and the recorder close (a secure-aggregation round cut short
    by the run's end), and clients.csv's train_samples are each client's latest train reply's."""

    def __init__(self, session: FlowerSession) -> None:
        self.session = session

    def on_end(self, state: RunState, now: float) -> None:
        session = self.session
        session.grid.close()
        session.recorder.close()
        for client in range(len(session.nodes)):
            session.clients[client].train_samples = session.recorder.train_examples.get(client, 0)
