"""``topk``: send only the k = ceil(fraction * n) largest |v_i| of each update, the rest kept by the
client as error feedback (Stich, Cordonnier and Jaggi, "Sparsified SGD with Memory", NeurIPS 2018;
Karimireddy et al., "Error Feedback Fixes SignSGD and other Gradient Compression Schemes", ICML 2019).

top_k(v) keeps the k coordinates of largest magnitude and zeroes the others (Stich et al., section 2, a
k-contraction).  Ties are broken by position: among coordinates of equal magnitude at the k-th place,
the lowest indices are kept (NaN counts as the largest magnitude), so the same vector gives the same
update on every device (``torch.topk`` alone keeps an unspecified subset of the ties).  With error
feedback (Stich et al.'s Algorithm 1, mem-SGD; Karimireddy et al.'s Algorithm 2, EF-SGD) a client sends
C(delta + e) and keeps e <- (delta + e) - C(delta + e); that memory is applied by
:class:`asyncfl.learn.compression.CompressedUploads`, for every kind.

Size on the wire: the cheaper of k (float32 value, int32 index) pairs, 8k bytes, and a bitmap of the
n positions plus k float32 values, ceil(n / 8) + 4k bytes (the bitmap wins once k > n / 32).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np
from pydantic import Field

from asyncfl.lazy import torch
from asyncfl.learn.compression._base import Compressor
from asyncfl.sections import Section


class TopkCompression(Section):
    """Top-k sparsification: the k largest-magnitude coordinates, k = ceil(fraction * n); equal magnitudes
    at the k-th place: the lowest indices."""

    kind: Literal["topk"]
    fraction: float = Field(
        default=0.01, gt=0, le=1, description="k / n: the share of coordinates sent (k = ceil(fraction * n))"
    )
    error_feedback: bool = Field(
        default=True,
        description="keep each client's unsent remainder and add it to its next update (Stich et al. 2018's "
        "memory); false: the remainder is lost",
    )


def keep_count(fraction: float, n: int) -> int:
    """k = ceil(fraction * n), fraction read as the decimal it was written as (0.3 * 10 is 3, not 4)."""
    return min(n, max(1, math.ceil(Fraction(repr(fraction)) * n)))


def compress(vector, spec: TopkCompression, rng: np.random.Generator):
    """top_k(vector): the k largest |v_i| kept (ties at the k-th magnitude: lowest indices first), the
    rest zero (``rng`` is not used)."""
    return top_k(vector, keep_count(spec.fraction, vector.numel()))


def top_k(vector, k: int):
    """``vector`` with all but its k largest |v_i| zeroed; among equal magnitudes the lowest indices win.

    The k-th largest magnitude t is a value, the same on every device; every |v_i| > t is kept and the
    ties |v_i| = t fill the remaining places in index order.  (A stable sort gives the same set at
    several times the cost of ``torch.topk``; this adds about two passes over the vector.)
    """
    magnitude = vector.abs().nan_to_num_(nan=math.inf)  # NaN first, as torch.topk ranks it
    threshold = torch.topk(magnitude, k, sorted=False).values.min()
    keep = magnitude >= threshold
    surplus = int(keep.sum()) - k  # ties at the threshold beyond the k places
    if surplus:
        tied = magnitude == threshold
        keep &= ~tied | (tied.cumsum(0) <= tied.sum() - surplus)
    return torch.where(keep, vector, torch.zeros((), dtype=vector.dtype, device=vector.device))


def upload_bytes(spec: TopkCompression, n: int) -> int:
    k = keep_count(spec.fraction, n)
    return min(8 * k, math.ceil(n / 8) + 4 * k)


COMPRESSOR = Compressor(TopkCompression, compress, upload_bytes, order=20)
