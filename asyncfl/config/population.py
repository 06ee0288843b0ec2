"""Schema of the client system model
(docs/explanation/architecture.md section 3), assembled from the sections of its owners.

Compute and network live in asyncfl/sim/profiles.py, the battery in asyncfl/sim/battery.py, the time
zones in asyncfl/sim/population.py.  ``population.availability`` is the union of the registered
availability kinds, each of which keeps its section next to its model (asyncfl/sim/availability/, one
module per kind); ``eligibility.unmetered`` the union of those whose registration sets ``unmetered_order``.
:class:`Population` holds the built-in kinds; :func:`population_model` the kinds registered now."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, Field, create_model, model_validator

from asyncfl.config.presets import PRESETS, PresetNames
from asyncfl.errors import ConfigError
from asyncfl.sections import Section
from asyncfl.sim.availability import Availability, kind_of
from asyncfl.sim.availability.always import AlwaysOnline
from asyncfl.sim.availability.registry import Unmetered, availability_union, unmetered_union
from asyncfl.sim.battery import Battery
from asyncfl.sim.population import TimeZones
from asyncfl.sim.profiles import Compute, Network

PRESET_LIST = tuple(PRESETS)


class Eligibility(Section):
    """Production FL's eligibility (Bonawitz et al. 2019, "Towards federated learning at scale"): a
    device checks in only while it is idle, charging and on an unmetered network.  Here
    ``population.availability`` stands for idle and reachable; ``charging: true`` adds the plugged-in
    windows of ``population.battery.charging``; ``unmetered`` adds an on/off process of being on
    Wi-Fi (any continuous-time availability kind: markov with mean_cycle_s, cyclic with period_s,
    diurnal, bernoulli with slot_s).  A client accepts a task only while every required condition
    holds; a task in progress fails when one ends, with reason ``charging`` or ``network``
    (``offline`` when availability ends), recorded in events.jsonl, rounds.csv and clients.csv."""

    charging: bool = Field(default=False, description="require the device to be plugged in (battery.charging windows)")
    unmetered: Unmetered | None = Field(
        default=None, description="on/off process of an unmetered network (null: not required)"
    )

    def reasons(self) -> list[str]:
        """The failure reasons these conditions add, in the order the conditions are checked."""
        return (["charging"] if self.charging else []) + (["network"] if self.unmetered is not None else [])

    @model_validator(mode="after")
    def _check(self) -> Eligibility:
        if not self.charging and self.unmetered is None:
            raise ConfigError("requires nothing: set charging: true and/or unmetered (or remove eligibility)")
        u = self.unmetered
        if u is not None:
            if getattr(u.p, "dist", None) == "label_correlated":
                raise ConfigError(
                    "unmetered.p: label_correlated is for availability only; use a number, uniform or tiers"
                )
            if kind_of(u).counts_rounds(u) is not None:
                raise ConfigError(
                    "unmetered: the network process runs in virtual time; use markov with mean_cycle_s, cyclic with "
                    "period_s, diurnal, or bernoulli with slot_s"
                )
        return self


def _apply_presets(raw: object) -> object:
    """``preset: name`` (or a list of names, applied in order) fills population keys; every key the
    scenario sets itself wins, key by key (a section whose ``kind``/``dist`` differs replaces the
    preset's section as a whole)."""
    if not isinstance(raw, dict) or raw.get("preset") is None:
        return raw
    from asyncfl.config.presets import PRESETS, merge

    names = raw["preset"] if isinstance(raw["preset"], list) else [raw["preset"]]
    merged: dict = {}
    for name in names:
        if not isinstance(name, str) or name not in PRESETS:
            return raw  # the field's own check names the allowed values
        merged = merge(merged, PRESETS[name].values)
    return {**merge(merged, {k: v for k, v in raw.items() if k != "preset"}), "preset": raw["preset"]}


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, str) else value


class Population(Section):
    """The client system model.  ``preset`` fills keys from a published distribution (see the presets table
    of docs/how-to/time-of-day.md); any key set here overrides the preset's."""

    preset: Annotated[list[PresetNames], BeforeValidator(_one_or_many)] | None = Field(
        default=None,
        description="fill keys from published distributions (a name or a list, applied in order); keys set here "
        "override the preset's, key by key (presets table below)",
        json_schema_extra={"allowed": "a name or a list of: " + ", ".join(f"`{n}`" for n in PRESET_LIST)},
    )
    compute: Compute = Compute()
    network: Network = Network()
    availability: Availability = AlwaysOnline()
    battery: Battery | None = None
    device_trace: Path | None = Field(
        default=None,
        description="CSV client,samples_per_s,uplink_mbps,downlink_mbps,latency_s; replaces compute/network",
    )
    timezones: TimeZones | None = Field(
        default=None,
        description="per-client UTC offsets in hours in [-12, 14], read by diurnal processes (null: everybody at UTC)",
        json_schema_extra={
            "allowed": "one offset for all (e.g. `-5`), a list of `{share, offset}` (shares sum to 1), or the "
            "distribution `{dist: uniform, low, high}`"
        },
    )
    eligibility: Eligibility | None = Field(
        default=None, description="conditions besides availability for accepting work (null: availability only)"
    )

    @model_validator(mode="before")
    @classmethod
    def _presets(cls, raw: object) -> object:
        return _apply_presets(raw)

    @model_validator(mode="after")
    def _check(self) -> Population:
        tz = self.timezones
        if isinstance(tz, list):
            total = sum(z.share for z in tz)
            if not tz or abs(total - 1.0) > 1e-6:
                raise ConfigError(f"timezones: shares must sum to 1, got {total:g}")
        elif isinstance(tz, (int, float)) and not -12 <= tz <= 14:
            raise ConfigError(f"timezones: a UTC offset lies in [-12, 14] hours, got {tz:g}")
        if tz is not None and not self.uses_local_time():
            raise ConfigError(
                "timezones: only diurnal processes read the local time of day, and none is set "
                "(population.availability.kind diurnal or population.eligibility.unmetered.kind diurnal); "
                "remove timezones or use one"
            )
        e = self.eligibility
        a = self.availability
        if e is not None and kind_of(a).counts_rounds(a) is not None:
            raise ConfigError(
                "eligibility: its conditions run in virtual time and are combined with an availability process in "
                f"virtual time; availability kind {a.kind} here counts sync rounds: use bernoulli with slot_s, markov "
                "with mean_cycle_s, cyclic with period_s, diurnal, trace or always"
            )
        if e is not None and e.charging and (self.battery is None or self.battery.charging is None):
            raise ConfigError(
                "eligibility.charging: needs the plugged-in windows of population.battery.charging; set them "
                "(e.g. battery: {capacity_j: 40000, charging: {period_s: 86400, plugged_fraction: 0.3}})"
            )
        return self

    def uses_local_time(self) -> bool:
        unmetered = self.eligibility.unmetered if self.eligibility else None
        return kind_of(self.availability).local_time or (unmetered is not None and kind_of(unmetered).local_time)


def population_model() -> type[Population]:
    """``population`` for the availability kinds registered now (a subclass of :class:`Population`)."""
    unmetered = Eligibility.model_fields["unmetered"]
    eligibility = create_model(  # type: ignore[call-overload]
        "Eligibility", __base__=Eligibility, __module__=__name__, unmetered=(unmetered_union() | None, unmetered)
    )
    fields = Population.model_fields
    return create_model(  # type: ignore[call-overload]
        "Population",
        __base__=Population,
        __module__=__name__,
        availability=(availability_union(), fields["availability"]),
        eligibility=(eligibility | None, fields["eligibility"]),
    )
