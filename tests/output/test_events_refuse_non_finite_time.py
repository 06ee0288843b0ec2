"""events.jsonl never holds a line that is not JSON: a NaN or infinite time is refused loudly (issue 45, item 3)."""

from __future__ import annotations

import json
import math

import pytest

from asyncfl.output.run_directory import RunDirectory


@pytest.mark.parametrize("t", [math.nan, math.inf])
def test_an_event_at_a_non_finite_time_is_refused_and_nothing_is_written(tmp_path, t):
    out = RunDirectory(tmp_path)
    out.event(1.5, 0, "download", 0, None)
    with pytest.raises(ValueError, match=r"non-finite time t=(nan|inf)"):
        out.event(t, 0, "compute", 0, None)
    out.close()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"t": 1.5, "client": 0, "event": "download", "base_version": 0}]
