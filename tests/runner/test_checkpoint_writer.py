"""The checkpoint writer: the state serialised at the call, written, synced and renamed on a thread, its errors
raised in the run loop; the progress record's staleness packed as one tensor and read back as the list it was."""

from __future__ import annotations

import zlib

import pytest
import torch

from asyncfl.runner.checkpoint import FILE, CheckpointWriter, unpacked, wait_for_writes


def test_the_checkpoint_holds_what_the_run_held_at_the_call(tmp_path):
    (tmp_path / "events.jsonl").write_text('{"t":0}\n{"t":1')  # a line still being written: past the offset
    writer = CheckpointWriter(tmp_path)
    params = torch.zeros(3)
    writer({"offsets": {"events.jsonl": 8}, "progress": {"staleness": [0, 2, 1]}, "learner": {"params": params}})
    params += 1  # the run goes on: the checkpoint keeps what it was
    writer.wait()
    saved = torch.load(tmp_path / FILE, weights_only=True)
    assert torch.equal(saved["learner"]["params"], torch.zeros(3))
    assert saved["crc32"] == {"events.jsonl": zlib.crc32(b'{"t":0}\n')}
    assert isinstance(saved["progress"]["staleness"], torch.Tensor)  # one record, not a number at a time
    assert unpacked(saved)["progress"]["staleness"] == [0, 2, 1]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_checkpoints_land_in_order_and_a_resume_here_waits_for_the_last(tmp_path):
    writer = CheckpointWriter(tmp_path)
    for version in range(5):
        writer({"offsets": {}, "progress": {"staleness": list(range(version))}, "aggregations": version})
    wait_for_writes(tmp_path)  # what load_for_resume does first
    saved = unpacked(torch.load(tmp_path / FILE, weights_only=True))
    assert saved["aggregations"] == 4 and saved["progress"]["staleness"] == [0, 1, 2, 3]
    writer.wait()  # nothing left to wait for


def test_a_failed_write_is_raised_in_the_run_loop_once(tmp_path):
    writer = CheckpointWriter(tmp_path / "removed")  # no such directory: the thread's open fails
    writer({"offsets": {}, "progress": {"staleness": []}})
    with pytest.raises(FileNotFoundError):
        writer.wait()
    writer.wait()


def test_an_older_checkpoint_keeps_its_list():
    checkpoint = {"progress": {"staleness": [3, 0]}}
    assert unpacked(checkpoint)["progress"]["staleness"] == [3, 0]
