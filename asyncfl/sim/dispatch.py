"""Who the K-async server may dispatch next: the idle clients that are online (and charged enough).

The server picks ``candidates[rng.integers(len(candidates))]`` among those clients in id order, and
when there are none it sleeps until the first idle client becomes usable.  :class:`ScanDispatcher`
answers both by looking at every client; :class:`IdleOnlineIndex` gives the same answers in
O(log N) per dispatch by keeping the set up to date at the moments it can change (a task ends, an
idle client comes online or drops), so a population of 100,000 costs about what one of 1,000 does.

A selection policy that serves K-async (``server.selection``, its registration listing ``k_async``)
other than ``uniform`` chooses among :meth:`candidates` instead (the same idle, online clients).

The index needs answers that are pure functions of time.  Availability answers are
(:mod:`asyncfl.sim.availability`), and so is a battery's: an idle battery only charges, so it can
take work from :meth:`~asyncfl.sim.battery.DeviceBattery.ready_at` on, a time computed in closed form
from the level its last task left.  An idle client with a battery is therefore usable from
``availability.next_online(max(now, ready_at))`` on, one event per client (:class:`ChargedIndex`),
where the scan used to look again every 60 s while the battery charged.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from asyncfl.sim.clients import ClientDevice
from asyncfl.sim.engine import sortedcontainers
from asyncfl.sim.slot_index import SlotColumnsIndex

# When ``online(now)`` says offline but ``next_online(now)`` says now (the two disagree in the last
# bit at a flip), the client is looked at again this much later, as the scan always did.
RECHECK_S = 60.0
INF = math.inf


def make_dispatcher(clients: list[ClientDevice]) -> IdleOnlineIndex | SlotColumnsIndex:
    slotted = getattr(clients, "slotted_bernoulli", lambda: None)()  # a population in columns
    if slotted is not None:
        return SlotColumnsIndex(clients, *slotted)
    if any(c.battery is not None for c in clients):
        return ChargedIndex(clients)
    return IdleOnlineIndex(clients)


def usable_from(client: ClientDevice, now: float) -> float:
    """The first time >= now at which the idle ``client`` is online and charged enough (inf: never);
    ``now + RECHECK_S`` where ``next_online`` and ``online`` disagree in the last bit."""
    battery = client.battery
    t = client.availability.next_online(now if battery is None else max(now, battery.ready_at()))
    return now + RECHECK_S if t <= now else t


class ScanDispatcher:
    """Every question answered by a pass over all clients: O(N) per dispatch."""

    def __init__(self, clients: list[ClientDevice]) -> None:
        self.clients = clients

    def pick(self, now: float, version: int, rng) -> ClientDevice | None:
        candidates = [
            c
            for c in self.clients
            if c.busy_until <= now
            and c.availability.online(now, version)
            and (c.battery is None or c.battery.can_accept(now))
        ]
        return candidates[int(rng.integers(len(candidates)))] if candidates else None

    def candidates(self, now: float, version: int) -> np.ndarray:
        """The ids :meth:`pick` chooses among, ascending."""
        ids = [
            c.id
            for c in self.clients
            if c.busy_until <= now
            and c.availability.online(now, version)
            and (c.battery is None or c.battery.can_accept(now))
        ]
        return np.array(ids, dtype=np.int64)

    def dispatched(self, client: ClientDevice) -> None:
        """``client`` has just been given a task (its ``busy_until`` is set)."""

    def wake_time(self, now: float) -> float:
        """Earliest time an idle client may become usable (comes online, or its battery charged)."""
        return min((usable_from(c, now) for c in self.clients if c.busy_until <= now), default=INF)


class IdleOnlineIndex:
    """The idle, online clients in id order (a sorted list), refreshed lazily from two heaps:
    ``busy`` (task end, client) and ``checks`` (next time an idle client's online state may flip).

    A flip time comes from ``next_offline``/``next_online`` and can differ in the last bits from
    where ``online`` itself flips (``t // slot_s``, ``(t + phase) % period``), so every client whose
    flip time is within a relative tolerance of now is asked ``online(now)`` again; the answer the
    index keeps is always ``online`` at the time of the question, as in the scan."""

    def __init__(self, clients: list[ClientDevice]) -> None:
        self.clients = clients
        self.eligible = sortedcontainers.SortedList()
        self.member = bytearray(len(clients))  # in ``eligible``
        self.idle = bytearray(len(clients))
        self.check_at = [INF] * len(clients)  # the live entry of an idle client in ``checks``
        self.checks: list[tuple[float, int]] = []
        self.busy = [(c.busy_until, c.id) for c in clients]
        heapq.heapify(self.busy)

    @staticmethod
    def _tolerance(now: float) -> float:
        return 1e-9 * max(1.0, abs(now))

    def _refresh(self, now: float, version: int) -> None:
        due = []
        while self.busy and self.busy[0][0] <= now:
            _, i = heapq.heappop(self.busy)
            if not self.idle[i] and self.clients[i].busy_until <= now:
                self.idle[i] = 1
                due.append(i)
        horizon = now + self._tolerance(now)
        while self.checks and self.checks[0][0] <= horizon:
            t, i = heapq.heappop(self.checks)
            if self.idle[i] and self.check_at[i] == t:
                self.check_at[i] = INF
                due.append(i)
        for i in due:  # entries pushed here wait for the next refresh, so this loop ends
            usable, flip = self._look(i, now, version)
            if usable:
                if not self.member[i]:
                    self.member[i] = 1
                    self.eligible.add(i)
            elif self.member[i]:
                self.member[i] = 0
                self.eligible.remove(i)
            if flip < INF:
                self.check_at[i] = flip
                heapq.heappush(self.checks, (flip, i))

    def _look(self, i: int, now: float, version: int) -> tuple[bool, float]:
        """Is idle client i usable at now, and when may that change (inf: never)?"""
        availability = self.clients[i].availability
        if availability.online(now, version):
            return True, availability.next_offline(now, version)
        return False, availability.next_online(now)

    def pick(self, now: float, version: int, rng) -> ClientDevice | None:
        self._refresh(now, version)
        if not self.eligible:
            return None
        return self.clients[self.eligible[int(rng.integers(len(self.eligible)))]]

    def candidates(self, now: float, version: int) -> np.ndarray:
        """The ids :meth:`pick` chooses among, ascending."""
        self._refresh(now, version)
        return np.fromiter(self.eligible, dtype=np.int64, count=len(self.eligible))

    def dispatched(self, client: ClientDevice) -> None:
        i = client.id
        self.idle[i], self.check_at[i] = 0, INF
        if self.member[i]:
            self.member[i] = 0
            self.eligible.remove(i)
        heapq.heappush(self.busy, (client.busy_until, i))

    def wake_time(self, now: float) -> float:
        """Called after :meth:`pick` found nobody: every idle client is unusable, and the scan's
        answer is the least ``usable_from(client, now)`` among them.  The heap holds the same times
        computed at earlier moments, equal up to the last bits, so clients are asked again at
        ``now`` in heap order until the next stored time is clearly past the least answer so far."""
        wake, asked = INF, []
        while self.checks and self.checks[0][0] <= wake + 2 * self._tolerance(wake if wake < INF else now):
            entry = heapq.heappop(self.checks)
            if not self._live(*entry):
                continue
            asked.append(entry)
            wake = min(wake, usable_from(self.clients[entry[1]], now))
        for entry in asked:
            heapq.heappush(self.checks, entry)
        return wake

    def _live(self, t: float, i: int) -> bool:
        return bool(self.idle[i]) and self.check_at[i] == t


class ChargedIndex(IdleOnlineIndex):
    """:class:`IdleOnlineIndex` for clients with batteries: an idle client is usable while it is
    online and from its battery's ``ready_at`` on (an idle battery only charges, so once ready it
    stays ready until its next task).  A client short of charge is looked at again at ``ready_at``
    (a lower bound of when it is usable: its availability is not walked hours ahead), the time the
    scan's 60 s polls used to approach.

    Eligibility (:class:`~asyncfl.sim.availability.AllOf`) is looked at again at its
    ``earliest_online``, a lower bound of the joint time, and walked one step per look: a client
    whose plug window is hours away costs nothing until then.  Only the membership decided at a
    look (``online(now)``, ``can_accept(now)``) counts, and :meth:`wake_time` walks to the exact
    joint time the clients whose bounds come first, so the answers stay the scan's."""

    def _look(self, i: int, now: float, version: int) -> tuple[bool, float]:
        client = self.clients[i]
        availability, battery = client.availability, client.battery
        if battery is not None and battery.ready_at() > now:  # short of charge: nothing to ask before then
            return False, battery.ready_at()
        if availability.online(now, version):
            if battery is None or battery.can_accept(now):
                return True, availability.next_offline(now, version)
        return False, availability.earliest_online(now)
