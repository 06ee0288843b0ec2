"""``server.selection.kind: online``: only the clients that can take work at the round's start are
candidates, then uniform among them.

This is the check-in model of production systems (Bonawitz et al. 2019, *Towards federated learning
at scale*, section 2.2): devices announce that they are idle, charging and on an unmetered network,
and the server picks participants among those that checked in.  Here a candidate is an idle client
that is online at the round's start (``availability.online(t0, round)``; with
``population.eligibility`` that includes being plugged in and on an unmetered network) and, with
``population.battery``, charged enough to accept the task (``battery.can_accept(t0)``).  Among them
it draws ``count`` uniformly without replacement from the round's stream, as ``uniform`` does
(``stream(seed, "selection", round)``).  **If fewer than count clients are online it takes them all**
(the round runs smaller instead of asking clients bound to fail); with none online the round asks
nobody and waits for a running task, as a sync round with no idle client does.

Only sync rounds: K-async dispatch already gives work only to idle clients that are online and
charged (:mod:`asyncfl.sim.dispatch`), so there ``online`` would be ``uniform``; it is refused there.
"""

from __future__ import annotations

from typing import Literal

from asyncfl.sections import Section
from asyncfl.sim.selection.base import SelectionKind, SelectionRequest, SelectionTags, checked_in


class OnlineSelection(Section):
    kind: Literal["online"] = "online"


class Online:
    """Uniform among the clients that checked in (see the module's docstring)."""

    def select(self, request: SelectionRequest) -> list[int]:
        online = checked_in(request).candidates
        count = request.count
        if count is None or count >= len(online):
            return online.tolist()
        chosen = request.rng.choice(len(online), size=count, replace=False)
        return sorted(online[chosen].tolist())


KIND = SelectionKind(
    section=OnlineSelection,
    build=lambda spec, num_clients, seed: Online(),
    summary="uniform among the clients online, eligible and charged at the round start",
    tags=SelectionTags(reads_feedback=False),
    examples=(("online", {"kind": "online"}),),
    order=1,
)
