"""``flower:``: a Flower ServerApp and ClientApp run on the virtual clock (``python -m asyncfl flower``,
:mod:`asyncfl.flower`).

The apps are named by the ``module:attribute`` strings Flower's own tools use; the command's
``--server-app`` / ``--client-app`` flags override them.  ``metrics`` and ``work`` say which keys of the
replies' records asyncfl reads (the compute-work contract of :mod:`asyncfl.flower.nodes`); their defaults
are those of Flower's PyTorch app template (``flwr new``).
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from asyncfl.errors import ConfigError
from asyncfl.sections import Section

APP_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
APP_SPEC_RULE = "a 'package.module:attribute' string, as Flower's own tools take it"


def check_app_spec(spec: object) -> None:
    """Raise :class:`ConfigError` unless ``spec`` is a ``module:attribute`` string."""
    if not (isinstance(spec, str) and APP_SPEC.fullmatch(spec)):
        raise ConfigError(f"{spec!r} is not {APP_SPEC_RULE} (e.g. my_app.server_app:app)")


class FlowerMetrics(Section):
    """Which keys of the evaluate replies' MetricRecord are metrics.csv's accuracy and loss (each the
    examples-weighted mean over the replies, as Flower's FedAvg aggregates them)."""

    accuracy: str = Field(default="eval_acc", description="reply metric read as accuracy")
    loss: str = Field(default="eval_loss", description="reply metric read as loss")


class FlowerWork(Section):
    """The compute-work contract: samples processed = the reply's ``examples`` metric x local epochs
    (``epochs``: read from the message's ConfigRecord, else the run config, else 1)."""

    examples: str = Field(default="num-examples", description="reply metric: examples the client processed")
    epochs: str = Field(default="local-epochs", description="train config / run_config key: local epochs (absent: 1)")


class Flower(Section):
    """A Flower app pair on the virtual clock: each client of the population is one Flower node."""

    server_app: str | None = Field(
        default=None, description="the ServerApp, 'package.module:attribute' (--server-app overrides it)"
    )
    client_app: str | None = Field(
        default=None, description="the ClientApp, 'package.module:attribute' (--client-app overrides it)"
    )
    run_config: dict[str, bool | int | float | str] = Field(
        default_factory=dict, description="Flower's run config, passed to both apps' Context"
    )
    metrics: FlowerMetrics = FlowerMetrics()
    work: FlowerWork = FlowerWork()

    @field_validator("server_app", "client_app")
    @classmethod
    def _spec(cls, value: str | None) -> str | None:
        if value is not None:
            check_app_spec(value)
        return value
