"""A population held in columns (asyncfl/sim/population.py ``Clients``) and clients.csv built from them
(asyncfl/runner/callbacks/clients_table.py, written by asyncfl/output/writing.py): the same numbers as the
per-client objects, the same bytes as the row-wise writer."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from asyncfl.config import validate_scenario
from asyncfl.output import writing
from asyncfl.output.csv_text import clean, column_texts
from asyncfl.output.writing import Sparse, sparse, write_columns
from asyncfl.sim.availability.measure import OfflineMeter
from asyncfl.sim.population import _masked_row_sums, build_clients, participation_probabilities


def _population(availability: dict, clients: int = 300):
    s = validate_scenario({"name": "cols", "timing_only": True, "data": {"clients": clients},
                           "population": {"availability": availability}})  # fmt: skip
    return (
        s,
        build_clients(s.population, clients, s.seed),
        participation_probabilities(s.population.availability, clients, s.seed),
    )


def test_only_touched_clients_are_built_and_listed_in_id_order() -> None:
    _, clients, _ = _population({"kind": "bernoulli", "p": 0.5}, 10)
    assert len(clients) == 10 and list(clients.built()) == []
    seven, two = clients[7], clients[2]
    assert clients[7] is seven  # built once
    assert [c.id for c in clients.built()] == [2, 7] and clients.built_ids().tolist() == [2, 7]
    with pytest.raises(IndexError):
        clients[10]
    speed = clients.speeds()
    assert isinstance(speed, np.ndarray) and two.profile.samples_per_s == speed[2]  # the profile reads the column


def test_masked_row_sums_are_the_one_dimensional_sums_bit_for_bit() -> None:
    rng = np.random.default_rng(4)
    values = rng.uniform(0.1, 30.0, 137) * rng.choice([1.0, 1e-3, 1e4], 137)
    mask = rng.random((500, 137)) < rng.uniform(0, 1, (500, 1))
    mask[0], mask[1] = False, True
    got = _masked_row_sums(mask, values)
    assert got[0] == 0.0
    assert all(got[r] == float(values[mask[r]].sum()) for r in range(500))  # ==, not approx
    assert _masked_row_sums(np.array([[True, False, True]]), np.array([1.5, 7.0, 2.25])).tolist() == [3.75]


def test_offline_in_rounds_equals_each_fresh_models_meter() -> None:
    _, clients, p = _population({"kind": "bernoulli", "p": {"dist": "uniform", "low": 0.1, "high": 1.0}})
    spans = [(30.0 * r, 30.0 * r + 17.0 + r % 5, r) for r in range(40)]  # rounds of uneven lengths
    meter = OfflineMeter(1000.0, spans)  # the run stopped inside round 33
    ids = np.arange(len(clients))
    got = clients.offline_in_rounds(ids, p, meter)
    assert got.tolist() == [meter(clients.availability_of(i)) for i in range(len(clients))]
    # hand-computed: rounds 0..32 whole, of 17 + r % 5 s (6 cycles of 17+18+19+20+21 = 95, then 17+18+19),
    # and round 33 (990 s on) up to 1000 s: a client offline in every round is offline 570 + 54 + 10 s
    assert meter.lengths.size == 34
    assert _masked_row_sums(np.ones((1, 34), dtype=bool), meter.lengths).tolist() == [634.0]
    assert 0 <= got.min() and got.max() < 634.0 and got.mean() == pytest.approx(634 * (1 - 0.55), rel=0.1)


def test_offline_in_slots_equals_each_fresh_models_meter() -> None:
    _, clients, p = _population({"kind": "bernoulli", "p": {"dist": "uniform", "low": 0.1, "high": 1.0}, "slot_s": 7.0})
    for until in (0.0, 3.5, 700.0, 702.25):  # 702.25: slot 100 (700 to 707) counted up to 702.25 when offline
        meter = OfflineMeter(until, [])
        got = clients.offline_in_rounds(np.arange(len(clients)), p, meter)
        assert got.tolist() == [meter(clients.availability_of(i)) for i in range(len(clients))]
    # at most every slot: 100 whole slots of 7 s and 2.25 s of slot 100; on average E[1 - p] = 0.45 of that
    assert 0.0 <= got.min() and got.max() <= 702.25 and got.mean() == pytest.approx(0.45 * 702.25, rel=0.1)


def test_offline_in_rounds_is_none_where_the_availability_has_no_columns() -> None:
    _, clients, p = _population({"kind": "markov", "p": 0.5, "mean_cycle_s": 60.0}, 5)
    assert clients.offline_in_rounds(np.arange(5), p, OfflineMeter(10.0, [(0.0, 1.0, 0)])) is None


def texts(values: np.ndarray) -> list[str]:
    return column_texts(values)


def test_texts_are_the_logs_cleaned_values() -> None:
    # numpy's rint(x * 1e6) / 1e6 gives 2e-06 for 2.5e-06 (2.5e-06 * 1e6 is 2.4999999999999996); Python's
    # correctly rounded round() gives 3e-06 (2.5e-06 is stored as 2.50000000000000010e-06)
    values = np.array([2.5e-06, 1 / 128, -1e-9, 1e16, 5.0, 0.1 + 0.2, math.nan, 123456.1234565])
    assert texts(values) == ["3e-06", "0.007812", "-0.0", "1e+16", "5.0", "0.3", "", repr(round(123456.1234565, 6))]
    assert texts(np.array([3, 0, -2])) == ["3", "0", "-2"]
    assert texts(np.full(4, math.nan)) == [""] * 4
    x = np.random.default_rng(1).lognormal(0, 4, 20_000)
    assert texts(x) == [repr(round(v, 6)) for v in x.tolist()]


@pytest.mark.parametrize("block", [3, 1 << 16])
def test_write_table_writes_the_bytes_of_the_row_wise_writer(tmp_path, monkeypatch, block: int) -> None:
    monkeypatch.setattr(writing, "ROWS_PER_BLOCK", block)
    n, ids = 11, np.array([1, 2, 9])
    columns = {
        "client": np.arange(n),
        "speed": np.linspace(0.5, 3.25, n),
        "attempts": sparse(n, 0, ids, [4, 1, 2]),
        "busy_s": sparse(n, 0.0, ids, [1.5, 2.0000004, 9.0]),
        "energy": sparse(n, math.nan, ids[:0], []),
        "p": np.array([0.25] * n),
        "lost": sparse(n, 0.0, ids[1:], [0.125, 7.0]),
    }
    write_columns(tmp_path / "cols.csv", columns)
    as_lists = {k: (v.dense() if isinstance(v, Sparse) else v).tolist() for k, v in columns.items()}
    with open(tmp_path / "rows.csv", "w", newline="", encoding="utf-8") as handle:  # the reference: csv, row by row
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(list(columns))
        writer.writerows([clean(v) for v in row] for row in zip(*as_lists.values()))
    assert (tmp_path / "cols.csv").read_bytes() == (tmp_path / "rows.csv").read_bytes()
    # client 2: speed 0.5 + 2 * 0.275 (linspace step 2.75 / 10), its counters, NaN energy empty
    assert (tmp_path / "cols.csv").read_bytes().splitlines()[3] == b"2,1.05,1,2.0,,0.25,0.125"
