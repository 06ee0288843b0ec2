"""Building blocks shared by every section of the scenario schema: a leaf of the package (it imports
only pydantic, numpy and the leaf :mod:`asyncfl.errors`), so each section can live with the code that reads
it, below the schema.  A section's own checks are its validators; they raise
:class:`~asyncfl.errors.ConfigError` (a ValueError, so pydantic reports it at the section's YAML path).

Every section is a frozen pydantic model that forbids unknown keys, so a typo in a YAML file is an
error (with a did-you-mean hint added by :mod:`asyncfl.config.loading`) rather than a silently
ignored setting.  Distributions are tagged unions on the ``dist`` key; a bare number means
``{dist: constant, value: number}``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from asyncfl.errors import ConfigError


class Section(BaseModel):
    """A scenario section: immutable, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)


class Constant(Section):
    """Every client gets the same value."""

    dist: Literal["constant"] = "constant"
    value: float = Field(gt=0)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value, dtype=float)


class Uniform(Section):
    """Uniform on [low, high] (e.g. FedAR/MIFA participation p_i ~ U[p_min, 1])."""

    dist: Literal["uniform"]
    low: float = Field(gt=0)
    high: float = Field(gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.low > self.high:
            raise ConfigError(f"low ({self.low}) must not exceed high ({self.high})")
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, size=n)


class LogNormal(Section):
    """Log-normal with the given median (= exp(mu)) and log-space standard deviation sigma."""

    dist: Literal["lognormal"]
    median: float = Field(gt=0)
    sigma: float = Field(ge=0)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.median * np.exp(self.sigma * rng.standard_normal(n))


class Pareto(Section):
    """Classical Pareto with minimum ``scale`` and tail index ``shape`` (heavy tail)."""

    dist: Literal["pareto"]
    scale: float = Field(gt=0)
    shape: float = Field(gt=0)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.scale * (1.0 + rng.pareto(self.shape, size=n))


class Tier(Section):
    share: float = Field(gt=0, le=1)
    value: float = Field(gt=0)


class Tiers(Section):
    """Discrete device classes, e.g. 20% slow / 60% mid / 20% fast; shares must sum to 1."""

    dist: Literal["tiers"]
    tiers: list[Tier] = Field(min_length=1)

    @model_validator(mode="after")
    def _shares_sum_to_one(self) -> Tiers:
        total = sum(t.share for t in self.tiers)
        if abs(total - 1.0) > 1e-6:
            raise ConfigError(f"tier shares must sum to 1, got {total:g}")
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        shares = np.array([t.share for t in self.tiers])
        values = np.array([t.value for t in self.tiers])
        return values[rng.choice(len(values), size=n, p=shares / shares.sum())]


def _number_means_constant(value: object) -> object:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"dist": "constant", "value": value}
    return value


Distribution = Annotated[
    Union[Constant, Uniform, LogNormal, Pareto, Tiers],
    BeforeValidator(_number_means_constant),
    Field(discriminator="dist"),
]
"""A positive per-client quantity: a number, or ``{dist: constant|uniform|lognormal|pareto|tiers, ...}``."""


def _probability_bounds(dist: Distribution, what: str) -> None:
    """Raise if a distribution can produce values outside (0, 1]."""
    upper = {
        "constant": lambda d: d.value,
        "uniform": lambda d: d.high,
        "tiers": lambda d: max(t.value for t in d.tiers),
    }.get(dist.dist)
    if upper is None:
        raise ConfigError(f"{what} must be a number, uniform or tiers (values in (0, 1]), not {dist.dist}")
    if upper(dist) > 1:
        raise ConfigError(f"{what} must lie in (0, 1], got values up to {upper(dist):g}")


# Field(json_schema_extra=OPT_IN): a feature key, left out of config.yaml while at its default
OPT_IN = {"opt_in": True}


def resolved_dump(section: BaseModel) -> dict:
    """``section.model_dump(mode="json")`` less every opt-in field (``json_schema_extra=OPT_IN``) that is at its
    default: a feature added later leaves the config.yaml of a scenario that does not use it as it was (byte-
    identical outputs for existing scenarios), and the file still reads back to the same scenario."""
    dump = section.model_dump(mode="json")
    _prune(section, dump)
    return dump


def _prune(value: object, dump: object) -> None:
    if isinstance(value, BaseModel) and isinstance(dump, dict):
        for name, info in type(value).model_fields.items():
            if name not in dump:
                continue
            field_value = getattr(value, name)
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            at_default = not info.is_required() and field_value == info.get_default(call_default_factory=True)
            if extra.get("opt_in") and at_default:
                del dump[name]
            else:
                _prune(field_value, dump[name])
    elif isinstance(value, (list, tuple)) and isinstance(dump, list):
        for item, item_dump in zip(value, dump):
            _prune(item, item_dump)
