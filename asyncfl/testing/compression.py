"""The compressor contract (``training.compression.kind``) as plain checks, run on the kind's default
section (``section(kind=name)``):

* the decoded update has the input's shape, dtype and device, for any length;
* the same stream gives the same update (the run's draws are keyed by client and attempt);
* a zero update is sent as zero;
* with error feedback, what was sent over several tasks plus the residual kept is what was computed;
* ``upload_bytes(section, n)`` is a positive int that never shrinks as n grows.

Every check takes the compressor (its registered name or its :class:`Compressor`).
"""

from __future__ import annotations

import numpy as np

from asyncfl.lazy import torch
from asyncfl.learn.compression import REGISTRY, CompressedUploads, Compressor
from asyncfl.testing.suite import CheckOutcome, expected_failures, names, run_checks

LENGTHS = (1, 7, 1000)


def compressor_of(entry: str | Compressor) -> Compressor:
    if isinstance(entry, Compressor):
        return entry
    if entry not in REGISTRY:
        raise ValueError(f"no compressor named {entry!r}; registered: {', '.join(REGISTRY)}")
    return REGISTRY[entry]


def _vector(n: int, seed: int = 0):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def check_shape_and_dtype(entry: str | Compressor) -> None:
    entry = compressor_of(entry)
    spec = entry.section(kind=entry.name)
    for n in LENGTHS:
        v = _vector(n)
        out = entry.compress(v, spec, np.random.default_rng(0))
        assert out.shape == v.shape and out.dtype == v.dtype and out.device == v.device, (
            f"{entry.name}: {n} float32 values came back as {tuple(out.shape)} {out.dtype} on {out.device}"
        )
        assert bool(torch.isfinite(out).all()), f"{entry.name}: a non-finite value sent for a finite update"


def check_same_stream_same_update(entry: str | Compressor) -> None:
    entry = compressor_of(entry)
    spec, v = entry.section(kind=entry.name), _vector(1000)
    first = entry.compress(v, spec, np.random.default_rng(3))
    assert torch.equal(first, entry.compress(v, spec, np.random.default_rng(3))), (
        f"{entry.name}: the same update and stream gave two different uploads"
    )


def check_zero_stays_zero(entry: str | Compressor) -> None:
    entry = compressor_of(entry)
    out = entry.compress(torch.zeros(50), entry.section(kind=entry.name), np.random.default_rng(0))
    assert torch.equal(out, torch.zeros(50)), f"{entry.name}: a zero update was sent as {out}"


def check_error_feedback_adds_up(entry: str | Compressor) -> None:
    entry = compressor_of(entry)
    uploads = CompressedUploads(entry.section(kind=entry.name), seed=0)
    uploads.feedback = True  # whatever the section's default
    deltas = [_vector(200, seed) for seed in range(3)]
    sent = []
    for attempt, delta in enumerate(deltas):
        pending: dict = {}
        sent.append(uploads.compress(0, attempt, delta, pending))
        uploads.commit(pending)
    total = torch.stack(sent).sum(0) + uploads.residuals[0]
    assert torch.allclose(total, torch.stack(deltas).sum(0), atol=1e-5), (
        f"{entry.name}: with error feedback, the updates sent plus the residual differ from the updates computed"
    )


def check_upload_bytes(entry: str | Compressor) -> None:
    entry = compressor_of(entry)
    spec, last = entry.section(kind=entry.name), 0
    for n in range(1, 300):
        size = entry.upload_bytes(spec, n)
        assert isinstance(size, int) and size >= max(last, 1), (
            f"{entry.name}: upload_bytes(n={n}) = {size!r}, after {last} for n={n - 1}"
        )
        last = size


CHECKS = (
    check_shape_and_dtype,
    check_same_stream_same_update,
    check_zero_stays_zero,
    check_error_feedback_adds_up,
    check_upload_bytes,
)


def check_compressor(
    entry: str | Compressor, *, expected_failed_checks: dict[str, str] | None = None
) -> list[CheckOutcome]:
    """Every check above; AssertionError on the first broken contract, except for the checks in
    ``expected_failed_checks`` ({check name: why}: reported as ``xfail``, see :mod:`asyncfl.testing.suite`)."""
    what = f"a compressor ({entry if isinstance(entry, str) else entry.name})"
    expected = expected_failures(expected_failed_checks, names(CHECKS), what)
    return run_checks(((c.__name__, None, lambda c=c: c(entry)) for c in CHECKS), expected)
