"""read_columns (the figures' reader, no pandas for small CSV files) gives read_table's values and
refuses what read_table refuses, naming the file and the line; a large file goes through read_table."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfl.output.reading as reading
from asyncfl.errors import ConfigError
from asyncfl.figures.timezones import _times_of
from asyncfl.output.reading import read_columns, read_table

TASKS = (
    "client,base_version,start_s,download_s,compute_s,upload_s,end_s,outcome\n"
    "1,0,0,0,1.5,4,5,delivered\n"
    "2,0,2,2,3,,20.25,running\n"
    '3,1,6,6,7,,8,"offline"\n'
)


def _same_as_read_table(path, usecols=None) -> None:
    columns = read_columns(path, usecols)
    table = read_table(path, usecols)
    assert list(columns) == list(table.columns)
    for name, values in columns.items():
        expected = table[name].to_numpy()
        if values.dtype == object:
            assert values.tolist() == expected.tolist()
        else:
            np.testing.assert_array_equal(values, expected.astype(np.float64))  # NaN where a cell is empty


@pytest.mark.parametrize("through_pandas", [False, True])
def test_values_are_read_tables(tmp_path, monkeypatch, through_pandas):
    if through_pandas:  # a file over the size limit: read_table's own values
        monkeypatch.setattr(reading, "SMALL_TABLE_BYTES", 0)
    path = tmp_path / "timeline_tasks.csv"
    path.write_text(TASKS, encoding="utf-8")
    _same_as_read_table(path)
    _same_as_read_table(path, usecols=["end_s", "client"])
    columns = read_columns(path)
    assert np.isnan(columns["upload_s"][1]) and columns["compute_s"][0] == 1.5  # by hand
    assert columns["outcome"].tolist() == ["delivered", "running", "offline"]


def test_a_table_without_rows_is_empty_columns(tmp_path):
    path = tmp_path / "offline_periods.csv"
    path.write_text("client,offline_from_s,offline_until_s\n", encoding="utf-8")
    assert {k: len(v) for k, v in read_columns(path).items()} == {
        "client": 0,
        "offline_from_s": 0,
        "offline_until_s": 0,
    }


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty (not even a header line)"),
        ("round,time,started,received\n1,5,0,1\n2,10,x,0\n", "line 3: column started holds 'x', not a number"),
        ("round,time,started,received\n1,5,0,1\n2,10,5\n", "line 3: column received is empty (a row cut short?)"),
        ("round,time,started,received\n1,5,0,1\n2,10,5,0,9\n", "line 3: 5 fields where the header has 4"),
        ("round,time,started\n1,5,0\n", "the header lacks the column(s) received"),
    ],
)
def test_damage_is_a_config_error_naming_file_and_line(tmp_path, text, message):
    path = tmp_path / "rounds.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="rounds.csv") as caught:
        read_columns(path)
    assert message in str(caught.value)
    with pytest.raises(ConfigError):
        read_table(path)  # the same file is refused by pandas' reader too


def test_update_times_are_their_versions_times():
    """Versions 2, 1, 2, 9 against rounds 1 (10 s) and 2 (25 s): 25, 10, 25 and NaN (no such round)."""
    times = _times_of(np.array([2.0, 1.0, 2.0, 9.0]), np.array([1.0, 2.0]), np.array([10.0, 25.0]))
    np.testing.assert_array_equal(times, [25.0, 10.0, 25.0, np.nan])
