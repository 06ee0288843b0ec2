"""What every client-selection policy shares (``server.selection``): its registration
(:class:`SelectionKind`), the request a server makes (:class:`SelectionRequest`) and the per-client
numbers the learning world hands back after each aggregation (:class:`ClientFeedback`).

A policy decides *who* a sync round asks (and, where its registration says so, which idle client a
K-async server dispatches next).  It lives in the timing world: no torch, no SimPy.  Policies that
rank clients by loss read :class:`ClientFeedback`, plain numpy columns indexed by client id that the
run loop fills from each aggregation's updates (:mod:`asyncfl.runner.simulation`); in ``timing_only`` runs
nothing fills them, so a kind tagged ``needs_losses`` is refused there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol

import numpy as np

from asyncfl.sections import Section

__all__ = [
    "ClientFeedback",
    "SelectionKind",
    "SelectionPolicy",
    "SelectionRequest",
    "SelectionTags",
    "can_take_work",
    "checked_in",
]


@dataclass
class ClientFeedback:
    """What the learning world reported of each client's last aggregated update; NaN (or -1 for
    ``last_version``) where the client has delivered nothing yet.  Columns, not objects: one float64 (or
    int64) array of length ``num_clients`` each, so a large population costs 8 bytes a column a client.

    ``samples``: |B_i|, the client's training samples (known from the start in full runs).
    ``loss``: the mean training loss of the update's local steps.
    ``loss_sq``: the mean over the update's samples of the squared per-sample loss (Oort's statistical
    utility is |B_i| * sqrt(loss_sq)).
    ``last_version``: the base version (counted from 0) of the client's update that an aggregation last took.
    ``duration_s``: the virtual seconds of the client's last delivered task (download + compute + upload);
    when its last task was cut by the deadline or cancelled, the seconds it had run by then (a lower bound:
    the server saw it take at least that long).
    ``accuracy``: the global model's accuracy on the client's test split at the last evaluation.
    ``timed_out_version``: the base version of the sync round whose deadline cut (or whose close cancelled)
    the client's task last;
    -1 never (FedScale's Oort counts such a straggler as explored, with its duration).
    """

    samples: np.ndarray
    loss: np.ndarray
    loss_sq: np.ndarray
    last_version: np.ndarray
    duration_s: np.ndarray
    accuracy: np.ndarray
    timed_out_version: np.ndarray
    filled: bool = False  # whether a learning world fills it (False in timing_only runs)

    @classmethod
    def empty(cls, num_clients: int, samples: np.ndarray | None = None) -> ClientFeedback:
        nan = lambda: np.full(num_clients, np.nan)  # noqa: E731
        return cls(
            samples=nan() if samples is None else np.asarray(samples, dtype=np.float64),
            loss=nan(),
            loss_sq=nan(),
            last_version=np.full(num_clients, -1, dtype=np.int64),
            duration_s=nan(),
            accuracy=nan(),
            timed_out_version=np.full(num_clients, -1, dtype=np.int64),
        )


@dataclass(frozen=True)
class SelectionRequest:
    """One selection: pick ``count`` of ``candidates`` (None: all of them).

    ``candidates``: the ids of the clients the server may ask now (idle; sorted ascending).
    ``version``: the global model version the selected clients will start from, counted from 0 (sync: the
    round's base version; K-async: the version being dispatched).
    ``now``: virtual seconds.  ``rng``: this selection's own stream (``stream(seed, "selection", version)``
    for sync rounds), so a policy's draws never shift another stream.
    ``clients``: the timing world's devices (profiles, availability) for policies that read them.
    ``feedback``: what the learning world reported so far.
    """

    version: int
    now: float
    candidates: np.ndarray
    count: int | None
    rng: np.random.Generator
    clients: list[Any]
    feedback: ClientFeedback


class SelectionPolicy(Protocol):
    """A built policy (one per run).  ``select`` returns client ids, sorted ascending, a subset of
    ``request.candidates`` of size ``min(count, len(candidates))`` (all of them when count is None) -
    unless its kind's tags say it may choose fewer (``fills_count=False``: TiFL asks one tier).

    Whatever a policy learns (Oort's explored set, TiFL's credits) it learns from the requests and the
    feedback it is given, so it needs no ``state_dict``: ``--resume`` replays the timing world from the start,
    and the policy with it, on the feedback the checkpoint recorded (asyncfl/selection_feedback.py)."""

    def select(self, request: SelectionRequest) -> list[int]: ...


@dataclass(frozen=True)
class SelectionTags:
    """What a selection kind states about its policy: the run reads it (which mode it may serve, which
    feedback to fill, how to narrow the candidates) and the contract checks (:mod:`asyncfl.testing.selection`)
    choose their checks by it, never by the kind's name.

    ``modes``: the server modes it can serve (``sync``: round selection; ``k_async``: dispatch).
    ``needs_losses``: reads ``ClientFeedback.loss``/``loss_sq``/``accuracy``, which only training fills
    (refused with ``timing_only``).
    ``reads_feedback``: reads :class:`ClientFeedback` at all; False (``uniform``, ``online``) spares a
    run the per-client columns and the per-aggregation record that resume replays.
    ``reads_accuracy``: reads ``ClientFeedback.accuracy``, which the run loop then fills at every
    evaluation (each ``eval.every_rounds`` aggregations) with the global model's accuracy on each client's
    test split - an extra evaluation only the kinds that ask for it pay.
    ``fills_count``: always chooses ``min(count, len(candidates))`` clients; False: may choose fewer (TiFL
    asks one tier, which may hold fewer than ``count``), and the contract suite checks "at most".
    ``checked_in_only``: the server narrows the candidates to the clients that checked in (:func:`checked_in`)
    before asking the policy, as FedScale hands Oort only its feasible (online) clients; a ranking policy
    would otherwise keep asking the same offline clients, round after round at the same instant.
    """

    modes: frozenset[str] = frozenset({"sync"})
    needs_losses: bool = False
    reads_feedback: bool = True
    reads_accuracy: bool = False
    fills_count: bool = True
    checked_in_only: bool = False


@dataclass(frozen=True)
class SelectionKind:
    """One value of ``server.selection.kind``, registered by its module as ``KIND``.

    ``section``: the YAML keys (a :class:`Section` whose ``kind: Literal["name"]`` names the policy).
    ``build(spec, num_clients, seed)`` -> the run's :class:`SelectionPolicy`.
    ``tags``: what it states about its policy (:class:`SelectionTags`).
    ``examples``: (name, spec dict) pairs the contract suite (asyncfl.testing.selection) runs.
    ``order``: place among the allowed values (the first is the default).
    ``warning(spec, clients, count)``: what a user should know about this policy in a scenario of ``clients``
    clients whose rounds ask ``count`` (None: everyone), or None; ``validate`` and the run print it, and
    summary.json keeps it (TiFL: tiers too small to fill a round).
    """

    section: type[Section]
    build: Callable[[Any, int, int], SelectionPolicy]
    summary: str = ""
    tags: SelectionTags = SelectionTags()
    examples: tuple[tuple[str, dict], ...] = ()
    order: int = 1000
    warning: Callable[[Any, int, int | None], str | None] | None = None

    @property
    def name(self) -> str:
        return self.section.model_fields["kind"].annotation.__args__[0]


def can_take_work(client: Any, now: float, rnd: int) -> bool:
    """Online (and eligible) at ``now`` in round ``rnd``, and charged enough where batteries exist: a
    client that has *checked in* (Bonawitz et al. 2019, section 2.2)."""
    if not client.availability.online(now, rnd):
        return False
    return client.battery is None or client.battery.can_accept(now)


def checked_in(request: SelectionRequest) -> SelectionRequest:
    """``request`` with its candidates narrowed to the clients that can take work at its start - the
    pool production systems (and FedScale's Oort) select from."""
    clients, now, rnd = request.clients, request.now, request.version
    online = [i for i in request.candidates.tolist() if can_take_work(clients[i], now, rnd)]
    return replace(request, candidates=np.array(online, dtype=np.int64))
