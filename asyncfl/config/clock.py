"""``clock:``: the time of day at virtual second 0 (diurnal availability, utc_time, time-of-day axes)."""

from __future__ import annotations

from datetime import date, datetime, timezone

from pydantic import Field, field_validator

from asyncfl.errors import ConfigError
from asyncfl.sections import Section


class Clock(Section):
    """Wall-clock time of day on the virtual clock: virtual second 0 is ``start_time``.  Diurnal
    processes read each client's local time from it (with ``population.timezones``); metrics.csv
    gains a ``utc_time`` column and the figures label virtual time as time of day."""

    start_time: str | None = Field(
        default=None,
        description="ISO date and time at virtual second 0, UTC unless it names an offset, e.g. 2026-01-05T00:00 "
        "(null: no time of day; diurnal processes then take virtual second 0 as midnight UTC)",
    )

    @field_validator("start_time", mode="before")
    @classmethod
    def _yaml_timestamp(cls, value: object) -> object:
        """YAML reads an unquoted 2026-01-05T00:00:00 (or a bare date) as a timestamp: keep it as text."""
        return value.isoformat() if isinstance(value, date) else value

    @field_validator("start_time")
    @classmethod
    def _parse(cls, value: str | None) -> str | None:
        if value is not None:
            start_datetime(value)
        return value


def start_datetime(text: str):
    """``clock.start_time`` as an aware UTC datetime."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"{text!r} is not an ISO date and time; write e.g. 2026-01-05T00:00 or 2026-01-05T08:30+02:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)
