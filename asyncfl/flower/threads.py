"""Legacy Flower apps on the one virtual clock: a ``ServerApp(server_fn=...)`` (or the deprecated
``ServerApp(strategy=..., config=...)``) whose legacy strategy (``flwr.server.strategy``) runs in Flower's
``Server``.

Flower's legacy ``Server.fit_round`` (``flwr/server/server.py``) asks the strategy's ``configure_fit`` for a list of
(client proxy, instructions), then hands the list to a ``ThreadPoolExecutor``: each pool thread calls
``grid.send_and_receive([one message])`` through its ``GridClientProxy`` (``flwr/server/compat/
grid_client_proxy.py``), in whatever order the threads run; ``evaluate_round`` does the same with
``configure_evaluate``.  One SimPy clock cannot be driven from several threads, and the order the threads arrive in
is not reproducible, so asyncfl serialises the calls by this deterministic rule:

- the strategy is wrapped (:class:`OrderedStrategy`, every other call passed through unchanged): the list its
  ``configure_fit`` / ``configure_evaluate`` returns is announced to the Grid before any pool thread starts
  (:meth:`~asyncfl.flower.grid.VirtualGrid.expect`): the batch of that round, its nodes in the list's order;
- the Grid answers the batch's calls one at a time in that order (:class:`Batch`: a call waits for its turn), all
  pushed at the same virtual start time, and closes the batch as one round when the last is pushed (one rounds.csv
  row per ``fit_round``, as a new-style round makes).  The pool takes its work in submission order, which is the
  list's order, so the call whose turn it is always has a thread, whatever the pool's size;
- ``aggregate_fit`` / ``aggregate_evaluate`` get the results sorted by node id: Flower hands them over in the order
  its futures happen to finish (a set), and float sums depend on order;
- an exception raised while answering a pool thread's call (a ConfigError, a ClientApp failing everywhere) would
  be counted by Flower as one client's failure: it is kept and raised again in the ServerApp's own thread, by the
  next aggregate or Grid call.

The legacy ``round_timeout`` reaches the Grid as each message's ``ttl`` (the proxy calls ``send_and_receive`` with
no timeout): a batch closes at its start + ttl at the latest, and a node not back by then gets Flower's expired
error reply (``ErrorCode.MESSAGE_UNAVAILABLE``), which Flower's proxy counts as a failure.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flwr.compat.server import ServerAppComponents
from flwr.server.strategy import FedAvg, Strategy
from flwr.serverapp import ServerApp

MESSAGE_UNAVAILABLE = (  # flwr/server/superlink/linkstate/utils.py, MESSAGE_UNAVAILABLE_ERROR_REASON
    "Error: Message Unavailable - The requested message could not be found in the "
    "database. It may have expired due to its TTL, been deleted because the "
    "destination SuperNode was removed from the federation, or never existed."
)


@dataclass
class Batch:
    """The single-message calls of one legacy ``fit_round`` / ``evaluate_round``: ``nodes`` in the order the
    strategy listed them (the order they are answered in), pushed at ``started`` (virtual seconds)."""

    nodes: list[int]
    started: float
    train: bool
    tasks: list[Any] = field(default_factory=list)  # the Grid's Tasks, in push order
    deadline_s: float | None = None  # virtual seconds after ``started`` (the first message's ttl)

    def turn(self) -> int | None:
        """The node whose call is answered next (None: every call is in)."""
        return self.nodes[len(self.tasks)] if len(self.tasks) < len(self.nodes) else None


class ThreadCalls:
    """The lock and the turn-taking of pool threads' calls, and the first exception raised while answering one."""

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.error: BaseException | None = None

    def wait_turn(self, batch: Batch, node: int) -> None:
        """Block (holding the condition) until ``node``'s call is the batch's next, or an earlier call failed."""
        self.condition.wait_for(lambda: self.error is not None or batch.turn() == node)

    def raise_kept(self) -> None:
        """Raise, in the ServerApp's thread, the exception a pool thread's call ran into (once)."""
        error, self.error = self.error, None
        if error is not None:
            raise error


class OrderedStrategy(Strategy):
    """A legacy strategy whose sampled rounds the Grid is told of, and whose results come sorted by node id (see
    the module's docstring); everything else is the wrapped strategy's."""

    def __init__(self, strategy: Strategy, grid: Any) -> None:
        self.strategy, self.grid = strategy, grid

    def __getattr__(self, name: str) -> Any:
        return getattr(self.strategy, name)

    def __repr__(self) -> str:
        return repr(self.strategy)

    def initialize_parameters(self, client_manager: Any) -> Any:
        return self.strategy.initialize_parameters(client_manager)

    def configure_fit(self, server_round: int, parameters: Any, client_manager: Any) -> Any:
        instructions = self.strategy.configure_fit(server_round, parameters, client_manager)
        stopped = not self.grid.expect([int(proxy.cid) for proxy, _ in instructions], train=True)
        return [] if stopped else instructions  # stopped: no node asked, the Server skips the round

    def configure_evaluate(self, server_round: int, parameters: Any, client_manager: Any) -> Any:
        instructions = self.strategy.configure_evaluate(server_round, parameters, client_manager)
        stopped = not self.grid.expect([int(proxy.cid) for proxy, _ in instructions], train=False)
        return [] if stopped else instructions  # stopped: no node asked, the Server skips the round

    def aggregate_fit(self, server_round: int, results: Any, failures: Any) -> Any:
        self.grid.threads.raise_kept()
        return self.strategy.aggregate_fit(server_round, by_node(results), sorted_failures(failures))

    def aggregate_evaluate(self, server_round: int, results: Any, failures: Any) -> Any:
        self.grid.threads.raise_kept()
        return self.strategy.aggregate_evaluate(server_round, by_node(results), sorted_failures(failures))

    def evaluate(self, server_round: int, parameters: Any) -> Any:
        return self.strategy.evaluate(server_round, parameters)


def by_node(results: Sequence[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """(proxy, result) pairs sorted by the proxy's node id."""
    return sorted(results, key=lambda pair: int(pair[0].cid))


def sorted_failures(failures: Sequence[Any]) -> list[Any]:
    """Failures in a reproducible order: (proxy, result) pairs by node id, then exceptions by their text."""
    pairs = [f for f in failures if isinstance(f, tuple)]
    errors = [f for f in failures if not isinstance(f, tuple)]
    return by_node(pairs) + sorted(errors, key=repr)


def ordered_app(app: Any, grid: Any) -> Any:
    """``app`` itself for a new-style ServerApp (its ``main`` drives the Grid from one thread); for a legacy one, a
    copy whose strategy is an :class:`OrderedStrategy`: the components' own Server's strategy when they give a Server
    (Flower ignores their strategy then), else their strategy, else Flower's default ``FedAvg()``, as
    ``flwr.server.server.init_defaults`` chooses."""
    if not isinstance(app, ServerApp) or app._main is not None:
        return app
    legacy = copy.copy(app)
    server_fn = app._server_fn

    def ordered_server_fn(context: Any) -> ServerAppComponents:
        if server_fn is not None:
            parts = server_fn(context)
        else:  # the deprecated ServerApp(server=..., config=..., strategy=..., client_manager=...)
            parts = ServerAppComponents(app._server, app._config, app._strategy, app._client_manager)
        server, strategy = parts.server, parts.strategy
        if server is not None:  # Flower then ignores the components' strategy (init_defaults): the server's runs
            server.set_strategy(OrderedStrategy(server.strategy, grid))
            return ServerAppComponents(server=server, config=parts.config, client_manager=parts.client_manager)
        strategy = OrderedStrategy(strategy if strategy is not None else FedAvg(), grid)
        return ServerAppComponents(config=parts.config, strategy=strategy, client_manager=parts.client_manager)

    legacy._server_fn = ordered_server_fn
    return legacy


__all__ = ["Batch", "OrderedStrategy", "ThreadCalls", "ordered_app"]
