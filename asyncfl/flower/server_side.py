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

Where the installed flwr's ``Strategy.start`` takes ``should_stop`` (flwr 1.43), the run's stop rules are passed
as it, unless the app gives its own: the strategy then leaves its loop itself; with 1.42 the Grid answers the
rounds after the stop with no reply (:mod:`asyncfl.flower.grid`).
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

FLOWER_START = Strategy.start
SIGNATURE = inspect.signature(FLOWER_START)
HAS_SHOULD_STOP = "should_stop" in SIGNATURE.parameters  # flwr >= 1.43


class StartWatcher(Protocol):
    """What hears a watched ``Strategy.start`` (:class:`asyncfl.flower.recording.ServerSide`)."""

    def central(self, server_round: int, metrics: MetricRecord | None) -> None: ...
    def starts(self, evaluates: bool) -> None: ...
    def returned(self, arrays: ArrayRecord) -> None: ...
    def should_stop(self) -> bool: ...


_lock = threading.Lock()
_watchers: dict[int, StartWatcher] = {}  # id(grid) -> its watcher, while its run plays


@contextmanager
def watching_start(grid: Any, watcher: StartWatcher) -> Iterator[None]:
    """While inside, ``Strategy.start`` on ``grid`` reports to ``watcher`` (see the module docstring)."""
    with _lock:
        if not _watchers:
            Strategy.start = _watched_start  # type: ignore[method-assign]
        _watchers[id(grid)] = watcher
    try:
        yield
    finally:
        with _lock:
            del _watchers[id(grid)]
            if not _watchers:
                Strategy.start = FLOWER_START  # type: ignore[method-assign]


@functools.wraps(FLOWER_START)
def _watched_start(self: Strategy, *args: Any, **kwargs: Any) -> Any:
    bound = SIGNATURE.bind(self, *args, **kwargs)
    watcher = _watchers.get(id(bound.arguments.get("grid")))
    if watcher is None:
        return FLOWER_START(self, *args, **kwargs)
    evaluate_fn = bound.arguments.get("evaluate_fn")
    watcher.starts(evaluate_fn is not None)
    if evaluate_fn is not None:
        bound.arguments["evaluate_fn"] = _reporting(evaluate_fn, watcher)
    if HAS_SHOULD_STOP and bound.arguments.get("should_stop") is None:
        bound.arguments["should_stop"] = lambda *_args, **_kwargs: watcher.should_stop()
    result = FLOWER_START(*bound.args, **bound.kwargs)
    initial = bound.arguments["initial_arrays"]
    watcher.returned(result.arrays if len(result.arrays) else initial)  # no round aggregated: the initial arrays
    return result


def _reporting(evaluate_fn: Callable, watcher: StartWatcher) -> Callable:
    """``evaluate_fn``, its every answer reported to ``watcher`` and returned unchanged."""

    @functools.wraps(evaluate_fn)
    def evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord | None:
        metrics = evaluate_fn(server_round, arrays)
        watcher.central(server_round, metrics)
        return metrics

    return evaluate
