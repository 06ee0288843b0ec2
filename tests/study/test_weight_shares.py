"""The idle-mechanism diagnostic (asyncfl.study.weight_shares): the share of aggregation weight per client
group against its share of the delivered updates, on a hand-written run directory."""

from __future__ import annotations

import json

import pytest
import yaml

from asyncfl.config import ConfigError
from asyncfl.output.reading import read_csv
from asyncfl.study.report import write_report
from asyncfl.study.seed_statistics import RunRecord
from asyncfl.study.weight_shares import starved_groups, weight_shares


def write_run(run_dir, rows: dict[int, tuple[float, int, float]]) -> None:
    """rows: client -> (samples_per_s, updates delivered, weight of each of its updates)."""
    run_dir.mkdir()
    lines = ["client,samples_per_s,attempts,participations,tier"]
    lines += [f"{c},{speed},{n},{n},{1 if c == 0 else 0}" for c, (speed, n, _) in rows.items()]
    (run_dir / "clients.csv").write_text("\n".join(lines) + "\n")
    updates, weights, version = ["version,client,base_version,staleness"], ["round,client,weight"], 0
    for client, (_, n, weight) in rows.items():
        for _ in range(n):
            version += 1
            updates.append(f"{version},{client},{version - 1},0")
            weights.append(f"{version},{client},{weight!r}")
    (run_dir / "updates.csv").write_text("\n".join(updates) + "\n")
    (run_dir / "weights.csv").write_text("\n".join(weights) + "\n")


def test_a_group_with_0_3_percent_of_the_weight_for_5_percent_of_the_updates_is_flagged(tmp_path):
    """100 updates: client 0 (the slowest, Q1) delivers 5 of weight 0.06 each = 0.3 of 100 in all (0.3 %);
    client 1 (Q2) 35 of 1.0, client 2 (Q3) 30 of 1.0, client 3 (Q4) 30 of 34.7 / 30 = 34.7 in all.
    Q1: 0.3 % of the weight for 5 % of the updates, ratio 0.06 < 0.25: starved.  Q4: 34.7 % for 30 %."""
    write_run(tmp_path / "run", {0: (1.0, 5, 0.06), 1: (2.0, 35, 1.0), 2: (3.0, 30, 1.0), 3: (4.0, 30, 34.7 / 30)})
    table = weight_shares(tmp_path / "run")
    assert list(table["group"]) == ["Q1", "Q2", "Q3", "Q4"] and list(table["updates"]) == [5, 35, 30, 30]
    assert list(table["update_share"]) == pytest.approx([0.05, 0.35, 0.30, 0.30])
    assert list(table["weight_share"]) == pytest.approx([0.003, 0.35, 0.30, 0.347])
    assert list(table["ratio"]) == pytest.approx([0.06, 1.0, 1.0, 0.347 / 0.30])
    assert list(table["starved"]) == [True, False, False, False]
    assert starved_groups(table) == [
        "group Q1: 0.3 % of the aggregation weight for 5.0 % of the updates (ratio 0.06 < 0.25): the rule "
        "discounts its updates almost to nothing."
    ]


def test_groups_from_a_clients_column_or_a_mapping(tmp_path):
    """The same run grouped by a clients.csv column (tier: 1 for client 0, 0 for the rest) and by a mapping
    (e.g. each client's dominant class): client 0 has 5 of 100 updates and 0.3 of 100 weight."""
    write_run(tmp_path / "run", {0: (1.0, 5, 0.06), 1: (2.0, 35, 1.0), 2: (3.0, 30, 1.0), 3: (4.0, 30, 34.7 / 30)})
    by_tier = weight_shares(tmp_path / "run", "tier").set_index("group")
    assert by_tier.loc["1", "weight_share"] == pytest.approx(0.003) and by_tier.loc["1", "starved"]
    assert by_tier.loc["0", "clients"] == 3 and not by_tier.loc["0", "starved"]
    by_class = weight_shares(tmp_path / "run", {0: 9, 1: 0, 2: 0, 3: 1}).set_index("group")
    assert list(by_class.index) == ["0", "1", "9"] and by_class.loc["9", "updates"] == 5
    assert by_class.loc["9", "starved"] and by_class.loc["0", "update_share"] == pytest.approx(0.65)


def test_speed_quartiles_split_equal_speeds_by_client_and_a_missing_file_is_named(tmp_path):
    """8 clients of equal speed: two per quartile, in client order; a balanced rule starves no one."""
    write_run(tmp_path / "run", {c: (1.0, 2, 0.5) for c in range(8)})
    table = weight_shares(tmp_path / "run")
    assert list(table["clients"]) == [2, 2, 2, 2] and list(table["ratio"]) == pytest.approx([1.0] * 4)
    assert starved_groups(table) == []
    with pytest.raises(ConfigError, match="clients.csv has no column 'colour' to group clients by; allowed: "):
        weight_shares(tmp_path / "run", "colour")
    (tmp_path / "run" / "weights.csv").unlink()
    with pytest.raises(ConfigError, match=r"no weights.csv \(run with algorithm.record_weights: true\)"):
        weight_shares(tmp_path / "run")


def test_a_study_report_shows_the_weight_shares_of_runs_that_recorded_weights(tmp_path):
    """Two seeds of variant fedhist with the starved run above: Q1 at 0.3 % of the weight for 5 % of the
    updates on both, flagged in report.md and weight_shares.csv."""
    records = []
    for seed in (0, 1):
        path = tmp_path / "fedhist" / f"seed{seed}"
        path.parent.mkdir(exist_ok=True)
        write_run(path, {0: (1.0, 5, 0.06), 1: (2.0, 35, 1.0), 2: (3.0, 30, 1.0), 3: (4.0, 30, 34.7 / 30)})
        (path / "metrics.csv").write_text("time,round,test_accuracy\n0,0,0.1\n10,1,0.5\n")
        (path / "summary.json").write_text(json.dumps({"status": "finished", "final_accuracy": 0.5}))
        records.append(RunRecord("fedhist", seed, path))
    write_report(tmp_path, records, None)
    rows = read_csv(tmp_path / "weight_shares.csv")
    assert [(r["grouping"], r["group"], r["seeds"], r["starved"]) for r in rows] == [
        ("speed_quartile", "Q1", "2", "True"), ("speed_quartile", "Q2", "2", "False"),
        ("speed_quartile", "Q3", "2", "False"), ("speed_quartile", "Q4", "2", "False"),
    ]  # fmt: skip
    assert "| speed quartile | fedhist | Q1 | 2 | 5.0 | 0.3 | 0.06 | yes |" in (tmp_path / "report.md").read_text()


def test_a_study_whose_data_isolate_a_class_is_grouped_by_its_holders_too(tmp_path):
    """The run above with its data partitioned isolated_class (label 9 on clients 0-1): the holders deliver
    5 + 35 = 40 of 100 updates and get 0.3 + 35 = 35.3 of 100 weight (ratio 0.8825); the others 60 updates and
    64.7 weight.  Both seeds' reports add these two rows after the speed quartiles."""
    records = []
    for seed in (0, 1):
        path = tmp_path / "fedhist" / f"seed{seed}"
        path.parent.mkdir(exist_ok=True)
        write_run(path, {0: (1.0, 5, 0.06), 1: (2.0, 35, 1.0), 2: (3.0, 30, 1.0), 3: (4.0, 30, 34.7 / 30)})
        partition = {"kind": "isolated_class", "label": 9, "clients": 2, "base": {"kind": "iid"}}
        (path / "config.yaml").write_text(yaml.safe_dump({"data": {"partition": partition}}))
        (path / "metrics.csv").write_text("time,round,test_accuracy\n0,0,0.1\n10,1,0.5\n")
        (path / "summary.json").write_text(json.dumps({"status": "finished", "final_accuracy": 0.5}))
        records.append(RunRecord("fedhist", seed, path))
    one = weight_shares(records[0].path, "isolated_class").set_index("group")
    assert list(one.index) == ["class 9 holders", "others"] and list(one["updates"]) == [40, 60]
    assert list(one["weight_share"]) == pytest.approx([0.353, 0.647]) and one.loc["class 9 holders", "ratio"] == (
        pytest.approx(0.353 / 0.40)
    )
    write_report(tmp_path, records, None)
    rows = read_csv(tmp_path / "weight_shares.csv")
    assert [(r["grouping"], r["group"]) for r in rows][4:] == [
        ("isolated_class", "class 9 holders"), ("isolated_class", "others")
    ]  # fmt: skip
    assert (
        "| isolated class | fedhist | class 9 holders | 2 | 40.0 | 35.3 | 0.88 |  |"
        in (tmp_path / "report.md").read_text()
    )
    (records[0].path / "config.yaml").write_text("data: {partition: {kind: iid}}\n")
    with pytest.raises(ConfigError, match="its data.partition is not isolated_class: no isolated class to group by"):
        weight_shares(records[0].path, "isolated_class")
