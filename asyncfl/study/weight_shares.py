"""Does a weighting rule starve a group of clients?  The share of aggregation weight each client group
received against its share of the delivered updates, from a run's files alone.

An aggregation rule that discounts some updates to nothing can look healthy by its own diagnostics while
one group of clients has no say in the model: in FedHist at h = N/K the slow class-9 clients are never in
the fresh set S (eqs. 9-13), get 0.3 % of the weight while delivering 5.2 % of the updates, and the
"utility term working" (|S| > 0, :mod:`asyncfl.algorithms.fedhist_diagnostics`) says nothing of them.
The same can happen with every rule whose weight falls with staleness or a score: FedAsync's s(τ),
FedBuff's discounts (with ``normalize: true`` the DynSGD / TWAFL-style staleness-weighted average,
:mod:`asyncfl.algorithms.staleness`), FedHist's utilities.  Per group:

clients        clients of the group in clients.csv
updates        updates of the group aggregated into a version (updates.csv)
update_share   updates / all updates
weight         the sum of the group's aggregation weights over all versions (weights.csv, written with
               ``algorithm.record_weights: true``)
weight_share   weight / the sum of all weights
ratio          weight_share / update_share: 1 when the rule weighs the group as often as it delivers
starved        ratio < STARVED (a quarter): the group's updates are mostly discounted away

Groups: ``speed_quartile`` (quartiles of clients.csv's samples_per_s: Q1 the slowest), ``isolated_class``
(for a run whose ``data.partition`` is ``isolated_class``: the clients that hold the isolated class, 0 ..
clients-1, against the others; FedHist's fairness experiment, Fig. 5), any other column of clients.csv, or a
mapping client -> group given by the caller (e.g. the dominant label of each client's partition).  A study's
report groups by speed quartile, and also by the isolated class where its runs have one
(:func:`study_groupings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

from asyncfl.errors import ConfigError
from asyncfl.output.reading import has_table, read_table
from asyncfl.study.seed_statistics import RunRecord

STARVED = 0.25  # weight share below a quarter of the update share: the group barely moves the model
SPEED_QUARTILE = "speed_quartile"
ISOLATED_CLASS = "isolated_class"


def isolated_class(run_dir: Path) -> tuple[int, int] | None:
    """(the isolated label, how many clients hold it) when the run's config.yaml partitions its data with
    ``isolated_class`` (its clients 0 .. clients-1 hold every sample of the label), else None."""
    try:
        config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    partition = (config.get("data") or {}).get("partition") or {}
    if not isinstance(partition, dict) or partition.get("kind") != ISOLATED_CLASS:
        return None
    return int(partition["label"]), int(partition["clients"])


def isolated_class_groups(run_dir: Path, clients: pd.Series) -> pd.Series:
    """client -> "class L holders" (clients 0 .. n-1) or "others" for ``run_dir``'s isolated_class partition."""
    found = isolated_class(run_dir)
    if found is None:
        raise ConfigError(f"{run_dir}: its data.partition is not {ISOLATED_CLASS}: no isolated class to group by.")
    label, holders = found
    names = [f"class {label} holders" if int(c) < holders else "others" for c in clients]
    return pd.Series(names, index=clients.to_numpy())


def client_groups(clients: pd.DataFrame, by: str) -> pd.Series:
    """client -> group label: the quartile of samples_per_s (Q1 slowest; ties broken by client id, so
    that four quartiles of equal size exist even when speeds repeat) or the value of clients.csv's ``by``."""
    if by == SPEED_QUARTILE:
        ranked = clients.sort_values(["samples_per_s", "client"], kind="stable")
        quartile = np.arange(len(ranked)) * 4 // max(len(ranked), 1) + 1
        return pd.Series([f"Q{q}" for q in quartile], index=ranked["client"].to_numpy()).sort_index()
    if by not in clients:
        raise ConfigError(
            f"clients.csv has no column {by!r} to group clients by; allowed: {SPEED_QUARTILE}, "
            f"{', '.join(map(str, clients.columns))}, or a mapping client -> group."
        )
    return pd.Series(clients[by].astype(str).to_numpy(), index=clients["client"].to_numpy())


def weight_shares(run_dir: Path, by: str | Mapping[int, object] = SPEED_QUARTILE) -> pd.DataFrame:
    """One row per client group of the run in ``run_dir`` (see the module docstring), in group order."""
    for name in ("weights.csv", "updates.csv", "clients.csv"):
        if not has_table(run_dir / name):
            hint = " (run with algorithm.record_weights: true)" if name == "weights.csv" else ""
            raise ConfigError(f"{run_dir}: no {name}{hint}; the weight shares need it.")
    clients = read_table(run_dir / "clients.csv")
    if isinstance(by, Mapping):
        groups = pd.Series({int(c): str(g) for c, g in by.items()})
    elif by == ISOLATED_CLASS:
        groups = isolated_class_groups(run_dir, clients["client"])
    else:
        groups = client_groups(clients, by)
    updates = read_table(run_dir / "updates.csv", usecols=["client"])["client"]
    weights = read_table(run_dir / "weights.csv", usecols=["client", "weight"])
    table = pd.DataFrame({
        "clients": groups.value_counts(),
        "updates": updates.map(groups).value_counts(),
        "weight": weights.groupby(weights["client"].map(groups))["weight"].sum(),
    }).fillna(0.0).sort_index()  # fmt: skip
    table["update_share"] = table["updates"] / max(float(table["updates"].sum()), 1.0)
    total = float(table["weight"].sum())
    table["weight_share"] = table["weight"] / total if total else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        table["ratio"] = table["weight_share"] / table["update_share"]
    table["starved"] = (table["updates"] > 0) & (table["ratio"] < STARVED)
    table = table.astype({"clients": int, "updates": int})
    return table.rename_axis("group").reset_index()[
        ["group", "clients", "updates", "update_share", "weight", "weight_share", "ratio", "starved"]
    ]


def starved_groups(table: pd.DataFrame) -> list[str]:
    """A sentence per group :func:`weight_shares` flags, e.g. for a study's report."""
    return [
        f"group {r.group}: {100 * r.weight_share:.1f} % of the aggregation weight for {100 * r.update_share:.1f} % "
        f"of the updates (ratio {r.ratio:.2f} < {STARVED}): the rule discounts its updates almost to nothing."
        for r in table.itertuples()
        if r.starved
    ]


def study_groupings(records: Sequence[RunRecord]) -> list[str]:
    """How a study's report groups its clients: by speed quartile, and by the isolated class where every run
    partitions its data with one."""
    isolated = bool(records) and all(isolated_class(r.path) is not None for r in records)
    return [SPEED_QUARTILE] + ([ISOLATED_CLASS] if isolated else [])


def study_weight_shares(records: Sequence[RunRecord], by: str = SPEED_QUARTILE) -> pd.DataFrame:
    """weight_shares.csv of a study: per variant and group, the shares averaged over the seeds whose runs
    recorded weights (the ratio of the mean shares; starved as above); empty when no run did."""
    rows = [
        weight_shares(r.path, by).assign(variant=r.label)
        for r in records
        if has_table(r.path / "weights.csv") and has_table(r.path / "updates.csv") and has_table(r.path / "clients.csv")
    ]
    if not rows:
        return pd.DataFrame()
    groups = pd.concat(rows).groupby(["variant", "group"], sort=False)
    table = groups[["update_share", "weight_share"]].mean()
    table.insert(0, "seeds", groups.size())
    table["ratio"] = table["weight_share"] / table["update_share"]
    table["starved"] = table["ratio"] < STARVED
    return table.reset_index()


def study_weight_table(records: Sequence[RunRecord]) -> pd.DataFrame:
    """weight_shares.csv of a study's report: :func:`study_weight_shares` for each of its
    :func:`study_groupings`, a ``grouping`` column first; empty when no run recorded weights."""
    tables = [study_weight_shares(records, by).assign(grouping=by) for by in study_groupings(records)]
    tables = [t for t in tables if len(t)]
    if not tables:
        return pd.DataFrame()
    table = pd.concat(tables, ignore_index=True)
    return table[["grouping"] + [c for c in table.columns if c != "grouping"]]
