"""``validate`` of a Flower scenario (one with a ``flower:`` section, :mod:`asyncfl.flower`): the apps it names are
loaded as its run would load them (flwr missing, a module that does not import, an object of the wrong type: one
:class:`ConfigError` listing each, exit 2), and only what applies to a Flower run is printed -- the nodes, the
apps, the stop rule -- not asyncfl's algorithm or local steps (the ServerApp's strategy and the ClientApp's
training decide those)."""

from __future__ import annotations

import sys
from pathlib import Path

from asyncfl.config import ConfigError
from asyncfl.config.schema import Scenario
from asyncfl.flower.apps import load_app, load_function, require_flwr


def apps_importable_from_here() -> None:
    """Put the working directory on ``sys.path``, as ``flwr run`` does: the apps are found from here."""
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))


def check_flower_apps(scenario: Scenario) -> None:
    """Raise one ConfigError listing every app of ``scenario``'s ``flower:`` section that its run could not load
    (a K-async run loads a ClientApp and ``flower.initial_arrays``; a sync run a ServerApp and a ClientApp)."""
    require_flwr()  # before any app is loaded: a missing extra is one line with the install command
    apps_importable_from_here()
    flower, k_async = scenario.flower, scenario.server.mode == "k_async"
    assert flower is not None  # (only Flower scenarios come here)
    loads = [
        (flower.server_app and not k_async, lambda: load_app(flower.server_app, "server", "flower.server_app")),
        (flower.client_app, lambda: load_app(flower.client_app, "client", "flower.client_app")),
        (flower.initial_arrays and k_async, lambda: load_function(flower.initial_arrays, "flower.initial_arrays")),
    ]
    problems = []
    for named, load in loads:
        try:
            if named:
                load()
        except ConfigError as exc:
            problems.append(str(exc))
    if len(problems) > 1:
        raise ConfigError(f"{len(problems)} problem(s):\n  " + "\n  ".join(problems))
    if problems:
        raise ConfigError(problems[0])


def flower_summary(source: Path, scenario: Scenario) -> list[str]:
    """What ``validate`` prints of a valid Flower scenario: who aggregates, the nodes, what ends the run, and
    the apps left to the ``flower`` command's flags."""
    flower, server, stop = scenario.flower, scenario.server, scenario.stop
    assert flower is not None
    client_app = flower.client_app or "(--client-app)"
    nodes = f"{scenario.data.clients} nodes (data.clients), availability {scenario.population.availability.kind}"
    if server.mode == "k_async":
        aggregates = f"asyncfl's k_async server ({scenario.algorithm.name}) trains ClientApp {client_app}"
    else:
        aggregates = f"ServerApp {flower.server_app or '(--server-app)'} with ClientApp {client_app}"
    limits = [f"{stop.rounds} train rounds" if stop.rounds is not None else None]
    limits.append(f"{stop.virtual_time_s:g} virtual seconds" if stop.virtual_time_s is not None else None)
    limits.append(f"test accuracy {stop.target_accuracy:g}" if stop.target_accuracy and stop.at_target else None)
    ends = " or ".join(limit for limit in limits if limit)
    ended_by = f"stop: at {ends}" + (", or when the ServerApp returns" if server.mode != "k_async" else "")
    lines = [f"{source}: valid (Flower: {aggregates}; {nodes})", ended_by]
    for key, flag in (("server_app", "--server-app"), ("client_app", "--client-app")):
        if getattr(flower, key) is None and not (key == "server_app" and server.mode == "k_async"):
            lines.append(f"flower.{key}: not named here: give it as {flag} to python -m asyncfl flower {source}")
    return lines
