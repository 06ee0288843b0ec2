"""The checkpoint writer: the state written, synced and renamed at the call, its errors raised there; the progress
record's staleness packed as one tensor and read back as the list it was."""

from __future__ import annotations

import zlib

import pytest
import torch

from asyncfl.runner.checkpoint import FILE, CheckpointWriter, unpacked


def test_the_checkpoint_holds_what_the_run_held_at_the_call(tmp_path):
    (tmp_path / "events.jsonl").write_text('{"t":0}\n{"t":1')  # a line still being written: past the offset
    writer = CheckpointWriter(tmp_path)
    params = torch.zeros(3)
    writer({"offsets": {"events.jsonl": 8}, "progress": {"staleness": [0, 2, 1]}, "learner": {"params": params}})
    params += 1  # the run goes on: the checkpoint keeps what it was
    saved = torch.load(tmp_path / FILE, weights_only=True)
    assert torch.equal(saved["learner"]["params"], torch.zeros(3))
    assert saved["crc32"] == {"events.jsonl": zlib.crc32(b'{"t":0}\n')}
    assert isinstance(saved["progress"]["staleness"], torch.Tensor)  # one record, not a number at a time
    assert unpacked(saved)["progress"]["staleness"] == [0, 2, 1]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_checkpoints_land_in_order(tmp_path):
    writer = CheckpointWriter(tmp_path)
    for version in range(5):
        writer({"offsets": {}, "progress": {"staleness": list(range(version))}, "aggregations": version})
    saved = unpacked(torch.load(tmp_path / FILE, weights_only=True))
    assert saved["aggregations"] == 4 and saved["progress"]["staleness"] == [0, 1, 2, 3]


def test_a_failed_write_is_raised_in_the_run_loop_at_the_call(tmp_path):
    writer = CheckpointWriter(tmp_path / "removed")  # no such directory: the open fails
    with pytest.raises(FileNotFoundError):
        writer({"offsets": {}, "progress": {"staleness": []}})
    assert not (tmp_path / "removed").exists()


def test_an_older_checkpoint_keeps_its_list():
    checkpoint = {"progress": {"staleness": [3, 0]}}
    assert unpacked(checkpoint)["progress"]["staleness"] == [3, 0]
