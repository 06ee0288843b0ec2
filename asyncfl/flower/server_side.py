"""What a ServerApp's ``Strategy.start`` does on the server side, where no Grid message passes: its server-side
evaluation (``evaluate_fn``) and the arrays it returns (the run's final model).

Flower calls ``evaluate_fn(server_round, arrays)`` inside ``Strategy.start`` (``flwr/serverapp/strategy/
strategy.py``): before the first round (round 0, the initial arrays) and after each round's federated evaluation,
and returns a ``Result`` whose ``arrays`` are the last aggregated ones.  Neither is visible to the Grid, and the
strategy is the user's object, built inside the app.  So while a Flower run plays (:func:`watching_start`),
Flower's base ``Strategy.start`` is replaced by one that, for a call on this run's Grid only, wraps ``evaluate_fn``
(each call's MetricRecord is reported at the virtual time it is made: server-side evaluation costs no virtual
time) and reports the ``Result``; calls on any other Grid run Flower's own, unchanged.  A strategy that overrides
``start`` without calling Flower's is not seen (its app gets no central columns; its final model is the arrays it
last sent, see :mod:`asyncfl.flower.recording`).

Where Flower's ``Strategy.start`` takes ``should_stop`` (flwr 1.43), the run's stop rules are passed as it (or
with the app's own, when it gives one: asked first, and either stops): the strategy then leaves its loop itself;
with 1.42 the Grid answers the rounds after the stop with no reply (:mod:`asyncfl.flower.grid`).  Flower's
``start`` is read when a run begins watching, not when asyncfl is imported: the function the installed flwr has
then (a test stands a 1.43-shaped one in its place) is the one wrapped, and the one put back.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from flwr.app import ArrayRecord, MetricRecord
from flwr.serverapp.strategy import Strategy

SHOULD_STOP = "should_stop"  # the keyword of flwr >= 1.43's Strategy.start for early stopping


class StartWatcher(Protocol):
    """What hears a watched ``Strategy.start`` (:class:`asyncfl.flower.recording.ServerSide`)."""

    def central(self, server_round: int, metrics: MetricRecord | None) -> None: ...
    def starts(self, evaluates: bool) -> None: ...
    def returned(self, arrays: ArrayRecord) -> None: ...
    def should_stop(self) -> bool: ...


_lock = threading.Lock()
_watchers: dict[int, StartWatcher] = {}  # id(grid) -> its watcher, while its run plays
_flower_start: list[Callable[..., Any]] = []  # Flower's Strategy.start, as it was when the first run began watching


@contextmanager
def watching_start(grid: Any, watcher: StartWatcher) -> Iterator[None]:
    """While inside, ``Strategy.start`` on ``grid`` reports to ``watcher`` (see the module docstring)."""
    with _lock:
        if not _watchers:
            _flower_start[:] = [Strategy.start]
            Strategy.start = _watched_start  # type: ignore[method-assign]
        _watchers[id(grid)] = watcher
    try:
        yield
    finally:
        with _lock:
            del _watchers[id(grid)]
            if not _watchers:
                Strategy.start = _flower_start.pop()  # type: ignore[method-assign]


@functools.wraps(Strategy.start)
def _watched_start(self: Strategy, *args: Any, **kwargs: Any) -> Any:
    flower_start = _flower_start[0]
    signature = inspect.signature(flower_start)
    bound = signature.bind(self, *args, **kwargs)
    watcher = _watchers.get(id(bound.arguments.get("grid")))
    if watcher is None:
        return flower_start(self, *args, **kwargs)
    evaluate_fn = bound.arguments.get("evaluate_fn")
    watcher.starts(evaluate_fn is not None)
    if evaluate_fn is not None:
        bound.arguments["evaluate_fn"] = _reporting(evaluate_fn, watcher)
    if SHOULD_STOP in signature.parameters:
        bound.arguments[SHOULD_STOP] = _stopping(bound.arguments.get(SHOULD_STOP), watcher)
    result = flower_start(*bound.args, **bound.kwargs)
    initial = bound.arguments["initial_arrays"]
    watcher.returned(result.arrays if len(result.arrays) else initial)  # no round aggregated: the initial arrays
    return result


def _stopping(app_should_stop: Callable[..., Any] | None, watcher: StartWatcher) -> Callable[..., bool]:
    """The ``should_stop`` passed to Flower's ``start``: the app's own (called first, with whatever Flower passes,
    so that it sees every round) or the run's stop rules."""

    def should_stop(*args: Any, **kwargs: Any) -> bool:
        app_says = bool(app_should_stop(*args, **kwargs)) if app_should_stop is not None else False
        return app_says or watcher.should_stop()

    return should_stop


def _reporting(evaluate_fn: Callable, watcher: StartWatcher) -> Callable:
    """``evaluate_fn``, its every answer reported to ``watcher`` and returned unchanged."""

    @functools.wraps(evaluate_fn)
    def evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord | None:
        metrics = evaluate_fn(server_round, arrays)
        watcher.central(server_round, metrics)
        return metrics

    return evaluate
