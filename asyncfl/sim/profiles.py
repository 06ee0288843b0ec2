"""Per-client device profiles drawn from the scenario (docs/explanation/architecture.md section 3).

Timing sits behind one small interface (FLSim's ``IDurationDistribution`` idea): a profile says how
long a download, a training task and an upload take.  With constant distributions and no jitter the
durations are exact, which is what the hand-computed timing tests rely on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.sections import Distribution, Section  # also types the scenario sections assembled above (config)
from asyncfl.sim.tracefiles import read_rows

MEGABIT_BYTES = 1e6 / 8


class Compute(Section):
    """Task time = steps x batch_size / samples_per_s x jitter, jitter ~ LogNormal(0, jitter_sigma) (steps:
    training.local_work)."""

    samples_per_s: Distribution = Field(default=100.0, description="training throughput per client")
    jitter_sigma: float = Field(default=0.0, ge=0, description="per-task log-normal jitter sigma")


class Network(Section):
    """Transfer time = latency_s + model_bytes / bandwidth (model_bytes from the real parameter count)."""

    uplink_mbps: Distribution = Field(default=10.0, description="upload bandwidth, megabits per second")
    downlink_mbps: Distribution = Field(default=50.0, description="download bandwidth, megabits per second")
    latency_s: Distribution = Field(default=0.05, description="one-way latency per transfer, seconds")


@dataclass(frozen=True)
class DeviceProfile:
    samples_per_s: float
    uplink_bytes_per_s: float
    downlink_bytes_per_s: float
    latency_s: float
    jitter_sigma: float = 0.0

    def compute_s(self, samples: int, jitter: float = 1.0) -> float:
        return samples / self.samples_per_s * jitter

    def download_s(self, nbytes: int) -> float:
        return self.latency_s + nbytes / self.downlink_bytes_per_s

    def upload_s(self, nbytes: int) -> float:
        return self.latency_s + nbytes / self.uplink_bytes_per_s


class DrawnProfiles:
    """Every client's drawn profile as numpy columns (8 bytes a client each); ``[i]`` builds client i's
    :class:`DeviceProfile` (a million of them up front cost seconds and ~100 bytes a client, and most
    clients of such a population never act).  ``float()`` of a float64 is the value ``tolist`` gives."""

    def __init__(self, speed: np.ndarray, up: np.ndarray, down: np.ndarray, latency: np.ndarray, sigma: float) -> None:
        self.columns = tuple(np.asarray(c, dtype=np.float64) for c in (speed, up, down, latency))
        self.sigma = sigma

    def __len__(self) -> int:
        return len(self.columns[0])

    def __getitem__(self, i: int) -> DeviceProfile:
        speed, up, down, latency = self.columns
        return DeviceProfile(float(speed[i]), float(up[i]), float(down[i]), float(latency[i]), self.sigma)


def draw_profiles(
    population: Section, num_clients: int, rng: np.random.Generator
) -> DrawnProfiles | list[DeviceProfile]:
    """Draw every client's profile, or read them from ``population.device_trace``."""
    if population.device_trace is not None:
        return read_device_trace(population.device_trace, num_clients, population.compute.jitter_sigma)
    speed = population.compute.samples_per_s.sample(rng, num_clients)
    up = population.network.uplink_mbps.sample(rng, num_clients) * MEGABIT_BYTES
    down = population.network.downlink_mbps.sample(rng, num_clients) * MEGABIT_BYTES
    latency = population.network.latency_s.sample(rng, num_clients)
    return DrawnProfiles(speed, up, down, latency, population.compute.jitter_sigma)


TRACE_COLUMNS = ("client", "samples_per_s", "uplink_mbps", "downlink_mbps", "latency_s")


def read_device_trace(path: Path, num_clients: int, jitter_sigma: float) -> list[DeviceProfile]:
    """One row per client: ``client,samples_per_s,uplink_mbps,downlink_mbps,latency_s``."""
    where = f"population.device_trace ({path})"
    profiles: dict[int, DeviceProfile] = {}
    for line, row in read_rows(path, TRACE_COLUMNS, where):
        try:
            client = int(row["client"])
            values = [float(row[c]) for c in TRACE_COLUMNS[1:]]
        except (TypeError, ValueError):
            raise ConfigError(f"{where}, line {line}: every column must be a number.") from None
        if not all(math.isfinite(v) for v in values) or min(values[:3]) <= 0 or values[3] < 0:
            raise ConfigError(f"{where}, line {line}: speeds and bandwidths must be positive, latency non-negative.")
        if not 0 <= client < num_clients or client in profiles:
            raise ConfigError(
                f"{where}, line {line}: client {client} is out of range 0..{num_clients - 1} or repeated."
            )
        s, u, d, lat = values
        profiles[client] = DeviceProfile(s, u * MEGABIT_BYTES, d * MEGABIT_BYTES, lat, jitter_sigma)
    missing = sorted(set(range(num_clients)) - set(profiles))
    if missing:
        raise ConfigError(f"{where}: no row for clients {missing[:10]}{' ...' if len(missing) > 10 else ''}.")
    return [profiles[c] for c in range(num_clients)]
