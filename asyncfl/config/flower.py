"""``flower:``: a Flower ServerApp and ClientApp run on the virtual clock (``python -m asyncfl flower``,
:mod:`asyncfl.flower`).

The apps are named by the ``module:attribute`` strings Flower's own tools use; the command's
``--server-app`` / ``--client-app`` flags override them.  ``metrics`` and ``work`` say which keys of the
replies' records asyncfl reads (the compute-work contract of :mod:`asyncfl.flower.nodes`); their defaults
are those of Flower's PyTorch app template (``flwr new``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from string import Formatter
from typing import Literal

from pydantic import Field, field_validator

from asyncfl.errors import ConfigError
from asyncfl.sections import Section

# how long Flower's SuperLink still lists a node that went offline, at most: HEARTBEAT_PATIENCE (2) x
# HEARTBEAT_DEFAULT_INTERVAL (30 s), flwr/common/constant.py (a node is online until 2 intervals after its last beat)
OFFLINE_GRACE_S = 60.0
APP_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
APP_SPEC_RULE = "a 'package.module:attribute' string, as Flower's own tools take it (e.g. my_app.server_app:app)"


# What a node's ``flower.node_config`` strings may name: Flower's simulation keys, then the client's profile
NODE_VALUES = ("partition-id", "num-partitions", "samples-per-s", "uplink-mbps", "downlink-mbps", "latency-s")
SIMULATION_KEYS = NODE_VALUES[:2]  # set by the simulation itself, as Flower's sets them
EXAMPLE_VALUES = {"partition-id": 0, "num-partitions": 1, **dict.fromkeys(NODE_VALUES[2:], 1.0)}  # their types
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
NodeConfigValue = bool | int | float | str


def node_config_of(template: Mapping[str, NodeConfigValue], values: Mapping[str, float]) -> dict[str, NodeConfigValue]:
    """One node's ``flower.node_config`` entries: each string's ``{name}`` replaced by the node's ``values[name]``
    as Python's ``str.format`` writes it (``{{`` and ``}}`` are literal braces, ``{latency-s:.2f}`` formats); a
    string that is one placeholder alone becomes the value itself (``"{samples-per-s}"`` -> the number 20.0)."""
    entries: dict[str, NodeConfigValue] = {}
    for key, value in template.items():
        alone = PLACEHOLDER.fullmatch(value) if isinstance(value, str) else None
        if alone and alone.group(1) in values:
            entries[key] = values[alone.group(1)]
        else:
            entries[key] = value.format_map(values) if isinstance(value, str) else value
    return entries


def check_node_config(template: Mapping[str, NodeConfigValue]) -> None:
    """Raise :class:`ConfigError` naming the key of ``flower.node_config`` that the simulation sets itself, or
    whose string names a value not in :data:`NODE_VALUES` (or formats it in a way Python cannot)."""
    allowed = ", ".join("{" + name + "}" for name in NODE_VALUES)
    for key, value in template.items():
        if key in SIMULATION_KEYS:
            raise ConfigError(
                f"{key}: set by the simulation (the node's index, the population's size), as Flower's sets it; "
                f"allowed: any other key (its string may say {{{key}}})"
            )
        if not isinstance(value, str):
            continue
        try:
            names = [field for _, field, _, _ in Formatter().parse(value) if field is not None]
            unknown = [name for name in names if name not in NODE_VALUES]
            if not unknown:
                value.format_map(EXAMPLE_VALUES)  # a bad format spec raises here, not mid-run
        except ValueError as error:  # a lone brace, a format spec a number cannot take
            raise ConfigError(f"{key}: {value!r}: {error}; allowed: placeholders {allowed}, {{{{ and }}}}") from None
        if unknown:
            raise ConfigError(f"{key}: {value!r} names {{{unknown[0]}}}; allowed: {allowed}")


def check_app_spec(spec: object) -> None:
    """Raise :class:`ConfigError` unless ``spec`` is a ``module:attribute`` string."""
    if not (isinstance(spec, str) and APP_SPEC.fullmatch(spec)):
        raise ConfigError(f"{spec!r} is not a 'package.module:attribute' string; allowed: {APP_SPEC_RULE}")


class FlowerMetrics(Section):
    """Which keys of the evaluate replies' MetricRecord are metrics.csv's accuracy and loss (each the
    examples-weighted mean over the replies, as Flower's FedAvg aggregates them), and which keys of the MetricRecord
    a strategy's server-side ``evaluate_fn`` returns are its central_accuracy and central_loss."""

    accuracy: str = Field(default="eval_acc", description="reply metric read as accuracy")
    loss: str = Field(default="eval_loss", description="reply metric read as loss")
    central_accuracy: str = Field(default="accuracy", description="evaluate_fn metric read as central_accuracy")
    central_loss: str = Field(default="loss", description="evaluate_fn metric read as central_loss")


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
    initial_arrays: str | None = Field(
        default=None,
        description="server.mode k_async: the initial model, 'package.module:function' returning its ArrayRecord, "
        "torch state_dict or list of numpy arrays",
    )
    run_config: dict[str, bool | int | float | str] = Field(
        default_factory=dict, description="Flower's run config, passed to both apps' Context"
    )
    node_config: dict[str, NodeConfigValue] = Field(
        default_factory=dict,
        description="entries added to every node's node_config beside partition-id and num-partitions; in a string, "
        "{partition-id}, {num-partitions}, {samples-per-s}, {uplink-mbps}, {downlink-mbps} and {latency-s} are the "
        "node's own (e.g. data-path: 'data/{partition-id}.npz')",
    )
    metrics: FlowerMetrics = FlowerMetrics()
    work: FlowerWork = FlowerWork()
    offline_grace_s: float = Field(
        default=OFFLINE_GRACE_S,
        ge=0,
        description="seconds an offline node is still listed by grid.get_node_ids() (Flower's SuperLink notices a "
        "node is gone only after missed heartbeats: at most 2 x 30 s); 0: exactly the nodes online now",
    )
    evaluation: Literal["timed", "untimed"] | None = Field(
        default=None,
        description="how evaluate messages cost virtual time: timed (real round trips, as Flower runs them), "
        "untimed (answered at once by every node asked, asyncfl's measurement: what K-async Flower runs do); "
        "null: timed with a ServerApp, untimed with server.mode k_async",
    )

    @field_validator("server_app", "client_app", "initial_arrays")
    @classmethod
    def _spec(cls, value: str | None) -> str | None:
        if value is not None:
            check_app_spec(value)
        return value

    @field_validator("node_config")
    @classmethod
    def _node_config(cls, value: dict[str, NodeConfigValue]) -> dict[str, NodeConfigValue]:
        check_node_config(value)
        return value


def check_flower_checkpoint(scenario: Section) -> None:
    """A Flower run with a ServerApp saves no checkpoint (its state is the ServerApp's strategy and loop, user code on
    its own stack that asyncfl can neither save nor restore): a ``checkpoint:`` section that asks for one is refused,
    not ignored.  Allowed: the section's defaults (no section), never (``every_rounds`` and ``every_virtual_s``
    null), or ``server.mode: k_async``, whose state is asyncfl's and the nodes' Flower records
    (:mod:`asyncfl.flower.k_async`), checkpointed as a native run's."""
    checkpoint = scenario.checkpoint
    if scenario.flower is None or scenario.server.mode == "k_async" or checkpoint == type(checkpoint)():
        return
    if checkpoint.every_rounds is None and checkpoint.every_virtual_s is None:
        return
    raise ConfigError(
        f"checkpoint ({checkpoint.model_dump()}): a Flower run with a ServerApp cannot be checkpointed (its state is "
        "your ServerApp's strategy and loop, user code on its own stack that asyncfl can neither save nor restore); "
        "allowed: no checkpoint section, checkpoint: {every_rounds: null} (never), or server.mode: k_async (asyncfl's "
        "server: checkpointed and resumed with python -m asyncfl flower --resume RUN_DIR)"
    )


def check_k_async_flower(scenario: Section) -> None:
    """A K-async run on Flower clients (:mod:`asyncfl.flower.k_async`): asyncfl's server aggregates, so there is
    no ServerApp and the initial model is named here; what needs asyncfl's own data set or upload is refused."""
    flower = scenario.flower
    if flower is None or scenario.server.mode != "k_async":
        return
    if flower.server_app is not None:
        raise ConfigError(
            f"flower.server_app ({flower.server_app!r}): a K-async run has no ServerApp, asyncfl's K-async server "
            "aggregates the ClientApp's replies (algorithm.name); allowed: null, or server.mode: sync to run it"
        )
    if flower.initial_arrays is None:
        raise ConfigError(
            "flower.initial_arrays: required with server.mode: k_async (no ServerApp hands out the initial model); "
            "allowed: 'package.module:function' returning the model's arrays"
        )
    if flower.evaluation == "timed":
        raise ConfigError(
            "flower.evaluation: timed is for a ServerApp's evaluate rounds; a K-async Flower run evaluates the "
            "global model untimed (asyncfl's server asks every node); allowed: untimed, null"
        )
    refused = {
        "eval.per_class": (scenario.eval.per_class, "accuracy per class needs asyncfl's test set", "false"),
        "training.compression": (
            scenario.training.compression.kind != "none",
            "a ClientApp's reply is the update as sent",
            "{kind: none}",
        ),
        "timing_only": (scenario.timing_only, "the ClientApp's replies time its tasks", "false"),
    }
    for key, (set_here, why, allowed) in refused.items():
        if set_here:
            raise ConfigError(f"{key}: not for a K-async Flower run ({why}); allowed: {allowed}")
