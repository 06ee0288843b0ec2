"""A run directory written before a column was renamed reads with today's names (asyncfl.output.columns.
RENAMED_COLUMNS): updates.csv's ``version`` is today's ``round``."""

from __future__ import annotations

import pytest

from asyncfl.errors import ConfigError
from asyncfl.output.reading import read_columns, read_table

OLD = "version,client,base_version,staleness\n1,0,0,0\n1,2,0,0\n2,1,0,1\n"


@pytest.fixture
def old_updates(tmp_path):
    path = tmp_path / "updates.csv"
    path.write_text(OLD)
    return path


def test_an_old_updates_csv_reads_with_round(old_updates):
    table = read_table(old_updates)
    assert list(table.columns) == ["round", "client", "base_version", "staleness"]
    assert table["round"].tolist() == [1, 1, 2] and table["staleness"].tolist() == [0, 0, 1]
    assert read_table(old_updates, usecols=["round", "client"]).to_dict("list") == {
        "round": [1, 1, 2], "client": [0, 2, 1],
    }  # fmt: skip
    columns = read_columns(old_updates, usecols=["round", "client"])
    assert list(columns) == ["round", "client"] and columns["round"].tolist() == [1.0, 1.0, 2.0]


def test_a_column_neither_name_holds_is_still_reported(old_updates):
    with pytest.raises(ConfigError, match=r"updates.csv: no column\(s\) weight in the header"):
        read_table(old_updates, usecols=["round", "weight"])
    with pytest.raises(ConfigError, match=r"updates.csv: no column\(s\) weight in the header"):
        read_columns(old_updates, usecols=["weight"])


def test_a_new_updates_csv_is_read_as_written(tmp_path):
    path = tmp_path / "updates.csv"
    path.write_text(OLD.replace("version,client", "round,client"))
    assert list(read_table(path).columns) == ["round", "client", "base_version", "staleness"]
