"""A device battery: linear drain while working, charging while plugged in (docs/explanation/architecture.md section 3).

Energy is in joules, time in virtual seconds.  The level between tasks is advanced lazily, so the
state is a pure function of the client's own history.

Whether the battery can take a task is decided by :meth:`DeviceBattery.ready_at`, the time the idle
battery reaches ``min_level``, computed in closed form from the level the last task left (charging
at ``charge_w`` only inside the plug windows): a battery at level L, plugged in for good, reaches
the threshold T at t = (T - L) / charge_w.  The K-async dispatcher wakes at exactly that time
(:mod:`asyncfl.sim.dispatch`), and the acceptance test at that time agrees with it to the bit.
"""

from __future__ import annotations

import math

from pydantic import Field, model_validator

from asyncfl.sections import Distribution, Section, _probability_bounds


class DeviceBattery:
    """One client's battery while the run goes on (its level, drawn from the ``Battery`` section)."""

    def __init__(
        self,
        capacity_j: float,
        level_j: float,
        min_level: float,
        charge_w: float = 0.0,
        plug_period_s: float = math.inf,
        plugged_s: float = 0.0,
        plug_phase_s: float = 0.0,
    ) -> None:
        self.capacity, self.level, self.min_level = capacity_j, level_j, min_level
        self.charge_w, self.period, self.plugged_s, self.phase = charge_w, plug_period_s, plugged_s, plug_phase_s
        self.updated_at = 0.0
        self.used_j = 0.0
        self.drained_at, self.drained_level = 0.0, level_j  # where the last task left it (time 0: the start)
        self._ready_at: float | None = None  # ready_at(), computed on first use after each task

    def plugged(self, t: float) -> bool:
        return self.charge_w > 0 and math.isfinite(self.period) and (t + self.phase) % self.period < self.plugged_s

    def _next_plug_change(self, t: float) -> float:
        if not (self.charge_w > 0 and math.isfinite(self.period)) or self.plugged_s <= 0:
            return math.inf
        if self.plugged_s >= self.period:
            return math.inf
        pos = (t + self.phase) % self.period
        change = t + (self.plugged_s - pos if pos < self.plugged_s else self.period - pos)
        # pos a hair below the period: the step rounds away and t would never move on
        return change if change > t else math.nextafter(t, math.inf)

    def _pieces(self, t0: float, t1: float):
        """Split [t0, t1] where the plug state changes: yields (start, end, plugged)."""
        t = t0
        while t < t1:
            end = min(t1, self._next_plug_change(t))
            yield t, end, self.plugged(t)
            t = end

    def _simulate(self, t0: float, t1: float, draw_w: float, level: float) -> tuple[float, float | None]:
        """Level at t1 and the depletion time (None if the level stays above zero)."""
        for start, end, plugged in self._pieces(t0, t1):
            net = draw_w - (self.charge_w if plugged else 0.0)
            if net > 0 and level - net * (end - start) <= 0:
                return 0.0, start + level / net
            level = min(self.capacity, level - net * (end - start))
        return level, None

    def level_at(self, t: float) -> float:
        """Advance the idle battery to time t (charging when plugged) and return the level."""
        if t > self.updated_at:
            self.level, _ = self._simulate(self.updated_at, t, 0.0, self.level)
            self.updated_at = t
        return self.level

    def can_accept(self, t: float) -> bool:
        """Charged enough at t to take a task (t not before the last task's end).  The level is
        advanced to t as before (clients.csv reports the level at the last look)."""
        self.level_at(t)
        return t >= self.ready_at()

    def ready_at(self) -> float:
        """The first time, from the end of the last task on, at which the idle battery holds
        ``min_level`` of its capacity (inf: never).  With deficit D = T - L after the last task and
        gain G = charge_w * plugged_s per plug window: the rest of the current window first, then
        k = ceil(D' / G) - 1 whole windows, then the part D' - k G of the next one at charge_w."""
        if self._ready_at is None:
            self._ready_at = self._reach(self.drained_at, self.drained_level, self.min_level * self.capacity)
        return self._ready_at

    def _reach(self, t0: float, level: float, target: float) -> float:
        deficit = target - level
        if deficit <= 0:
            return t0
        if self.charge_w <= 0 or self.plugged_s <= 0 or not math.isfinite(self.period):
            return math.inf
        if self.plugged_s >= self.period:  # plugged in for good
            return t0 + deficit / self.charge_w
        pos = (t0 + self.phase) % self.period
        if pos < self.plugged_s:  # inside a window: charge for the rest of it first
            rest = self.plugged_s - pos
            if deficit <= self.charge_w * rest:
                return t0 + deficit / self.charge_w
            deficit -= self.charge_w * rest
        window = self.charge_w * self.plugged_s
        whole = max(0, math.ceil(deficit / window) - 1)
        start = t0 + (self.period - pos) + whole * self.period  # the window in which the deficit is made up
        return start + (deficit - whole * window) / self.charge_w

    def depletion_time(self, t0: float, t1: float, energy_j: float) -> float | None:
        """When would a phase spending ``energy_j`` evenly over [t0, t1] empty the battery? No state change."""
        if t1 <= t0:
            return t0 if energy_j > self.level_at(t0) else None
        return self._simulate(t0, t1, energy_j / (t1 - t0), self.level_at(t0))[1]

    def consume(self, t0: float, t_end: float, t1: float, energy_j: float) -> None:
        """Apply the phase [t0, t1] spending ``energy_j`` evenly, stopped at ``t_end`` <= t1."""
        rate = energy_j / (t1 - t0) if t1 > t0 else 0.0
        start_level = self.level_at(t0)
        self.level, _ = self._simulate(t0, t_end, rate, start_level)
        self.level = max(self.level, 0.0)
        self.used_j += rate * (t_end - t0) if t1 > t0 else energy_j
        self.updated_at = t_end
        self.drained_at, self.drained_level, self._ready_at = t_end, self.level, None


class Charging(Section):
    """The device is plugged in for ``plugged_fraction`` of every period (random phase per client)."""

    period_s: float = Field(default=86400.0, gt=0)
    plugged_fraction: float = Field(default=0.3, ge=0, le=1)
    charge_w: float = Field(default=5.0, ge=0, description="charging power, joules per second")


class Battery(Section):
    """Energy model: a task draws joules_per_sample while training and joules_per_byte while
    transferring; a client refuses work below ``min_level`` and fails a task when it hits zero."""

    capacity_j: float = Field(gt=0)
    initial_level: Distribution = Field(default=1.0, description="fraction of capacity at time 0")
    joules_per_sample: float = Field(default=0.01, ge=0)
    joules_per_byte: float = Field(default=1e-7, ge=0)
    min_level: float = Field(default=0.1, ge=0, le=1, description="fraction needed to accept a task")
    charging: Charging | None = None

    @model_validator(mode="after")
    def _check_level(self) -> Battery:
        _probability_bounds(self.initial_level, "initial_level")
        return self
