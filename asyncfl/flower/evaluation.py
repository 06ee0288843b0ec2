"""Flower's evaluation replies as metrics.csv's numbers: one rule for every Flower run, synchronous (a ServerApp's
federated evaluation) or K-async (asyncfl's server asking every node), so that one study compares them.

Each metric is the mean of the replies' values weighted by their examples (``flower.work.examples``, Flower's
``num-examples``), as Flower's FedAvg aggregates evaluation metrics (``aggregate_metricrecords`` in
``flwr/serverapp/strategy/strategy_utils.py``); replies that are errors, or lack the metric or the examples, are
left out (a reply whose metric is NaN too), and a metric no reply carries is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from flwr.app import ConfigRecord, Message, MetricRecord, RecordDict


def metric(content: RecordDict, key: str) -> float | None:
    """The value of ``key`` in the first of ``content``'s MetricRecords that has it, else the first number under
    ``key`` in a ConfigRecord: Flower's legacy replies (a NumPyClient's ``evaluate``, as SecAgg apps run) carry their
    metrics dict in the ConfigRecord ``evaluateres.metrics`` (``flwr/compat/common/recorddict_compat.py``).  None:
    no record has it."""
    records = content.values()  # not content.metric_records: that property builds a new dict at each call
    for record in records:
        if isinstance(record, MetricRecord) and key in record:
            return record[key]
    for record in records:
        if isinstance(record, ConfigRecord) and key in record:
            value = record[key]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return value
    return None


def reply_metric(reply: Message, key: str) -> float:
    """A reply's metric ``key`` (NaN: an error reply, or no such metric)."""
    if reply.has_error() or not reply.has_content():
        return math.nan
    value = metric(reply.content, key)
    return math.nan if value is None else float(value)


def examples_of(reply: Message, key: str) -> float:
    """A reply's examples (metric ``key``; 0: none)."""
    value = reply_metric(reply, key)
    return 0.0 if math.isnan(value) else value


def arrays_finite(reply: Message) -> bool:
    """No NaN or infinity in the arrays of a reply's ArrayRecords (an error reply has none: True)."""
    if reply.has_error() or not reply.has_content():
        return True
    records = reply.content.array_records.values()
    return all(np.isfinite(array.numpy()).all() for record in records for array in record.values())


def weighted_metrics(replies: Iterable[Message], keys: Sequence[str], examples: str) -> dict[str, float]:
    """Each of ``keys`` as the ``examples``-weighted mean over ``replies`` (see the module docstring)."""
    totals = {key: 0.0 for key in keys}
    weights = {key: 0.0 for key in keys}
    for reply in replies:
        weight = examples_of(reply, examples)
        if weight <= 0:
            continue
        for key in keys:
            value = reply_metric(reply, key)
            if not math.isnan(value):
                totals[key] += value * weight
                weights[key] += weight
    return {key: totals[key] / weights[key] if weights[key] else math.nan for key in keys}
