"""K-async dispatch over a population in columns: every client's Bernoulli availability per time slot
(``population.availability: {kind: bernoulli, slot_s: ...}``, no battery) read for all clients at once.

:class:`asyncfl.sim.dispatch.IdleOnlineIndex` asks each client's availability model, so it builds
every client of the population (its device, model and stream: kilobytes each, and seconds at 10^6
clients) before the first dispatch.  Here the clients' streams run side by side in columns
(:class:`asyncfl.sim.stream_columns.PCG64Columns`): client i is online in slot s when draw s of its
stream is below p_i (asyncfl/sim/availability/bernoulli.py), so the whole population's state in the
current slot is one boolean column, advanced one draw per slot.  A client's object is built only
when it is picked.

The answers are those of the scan (``ScanDispatcher``): the candidates are the idle clients
(``busy_until <= now``) online at ``now`` (slot ``int(now // slot_s)``, as the model computes it), in
id order, and the pick is ``candidates[rng.integers(len(candidates))]``.  The k-th candidate is found
through per-block counts (a cumulative sum over blocks of ``BLOCK`` clients, then one block), so a
pick costs O(N / BLOCK + BLOCK), and a slot change O(N) once.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from asyncfl.sim.stream_columns import PCG64Columns, below, client_streams

BLOCK = 1024
INF = math.inf
BATTERY_POLL_S = 60.0  # = asyncfl.sim.dispatch.BATTERY_POLL_S (the scan's look-again delay)


class SlotColumnsIndex:
    """The idle, online clients of a slotted-Bernoulli population, from columns."""

    def __init__(self, clients, seed: int, slot_s: float, p) -> None:
        n = len(clients)
        self.clients, self.slot_s = clients, slot_s
        self.p = np.asarray(p, dtype=np.float64)
        self.streams: PCG64Columns = client_streams(seed, "availability", n)
        self.slot = -1  # the slot whose draws ``online`` holds
        self.online = np.zeros(n, dtype=bool)
        self.idle = np.ones(n, dtype=bool)  # nobody is busy at the start
        self.busy: list[tuple[float, int]] = []  # (task end, client) of the busy clients
        self.eligible = np.zeros(n, dtype=bool)
        self.counts = np.zeros(-(-n // BLOCK), dtype=np.int64)

    def _advance_to(self, slot: int) -> None:
        """Draw every client's state up to ``slot`` and rebuild the candidate column."""
        while self.slot < slot:
            self.online = below(self.streams.next_uint64(), self.p)
            self.slot += 1
        self.eligible = self.idle & self.online
        padded = np.zeros(len(self.counts) * BLOCK, dtype=np.int64)
        padded[: len(self.eligible)] = self.eligible
        self.counts = padded.reshape(-1, BLOCK).sum(axis=1)

    def _set(self, i: int, value: bool) -> None:
        if self.eligible[i] != value:
            self.eligible[i] = value
            self.counts[i // BLOCK] += 1 if value else -1

    def _refresh(self, now: float) -> None:
        slot = int(now // self.slot_s)
        while self.busy and self.busy[0][0] <= now:
            _, i = heapq.heappop(self.busy)
            if self.clients[i].busy_until <= now:
                self.idle[i] = True
                self._set(i, bool(self.online[i]) if slot == self.slot else False)
        if slot != self.slot:
            self._advance_to(slot)

    def pick(self, now: float, version: int, rng):
        self._refresh(now)
        total = int(self.counts.sum())
        if not total:
            return None
        return self.clients[self._kth(int(rng.integers(total)))]

    def _kth(self, k: int) -> int:
        """The id of the k-th candidate (0-based) in id order."""
        ends = np.cumsum(self.counts)
        block = int(np.searchsorted(ends, k, side="right"))
        before = int(ends[block - 1]) if block else 0
        members = np.flatnonzero(self.eligible[block * BLOCK : (block + 1) * BLOCK])
        return block * BLOCK + int(members[k - before])

    def candidates(self, now: float, version: int) -> np.ndarray:
        """The ids :meth:`pick` chooses among, ascending."""
        self._refresh(now)
        return np.flatnonzero(self.eligible).astype(np.int64)

    def dispatched(self, client) -> None:
        i = client.id
        self.idle[i] = False
        self._set(i, False)
        heapq.heappush(self.busy, (client.busy_until, i))

    def wake_time(self, now: float) -> float:
        """Called after :meth:`pick` found nobody: every idle client is offline in this slot, and the
        scan's answer is the least ``next_online(now)`` among them, the start of the first later slot
        in which one of them is online (``first(True, slot) * slot_s``, as the model computes it)."""
        idle = np.flatnonzero(self.idle)
        if not len(idle) or not (self.p[idle] > 0).any():
            return INF
        ahead, p, slot = self.streams.subset(idle), self.p[idle], self.slot
        while True:
            slot += 1
            if below(ahead.next_uint64(), p).any():
                wake = slot * self.slot_s
                return now + BATTERY_POLL_S if wake <= now else wake
