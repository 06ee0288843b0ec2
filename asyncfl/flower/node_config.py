"""Each Flower node's ``node_config``: what Flower's simulation sets (``partition-id``, ``num-partitions``) plus the
scenario's ``flower.node_config`` entries, whose strings may name the node's own values
(:data:`~asyncfl.config.flower.NODE_VALUES`): ``data-path: "data/{partition-id}.npz"`` gives node 3
``data/3.npz``, ``tier: "{samples-per-s}"`` its drawn compute speed (samples per second, a number).

The profile values are those the run's population draws (:func:`asyncfl.sim.profiles.draw_profiles` on the same
``profiles`` stream of the seed, or the device trace), so a ClientApp sees the speed and links its node runs with."""

from __future__ import annotations

from collections.abc import Mapping

from flwr.common.constant import NUM_PARTITIONS_KEY, PARTITION_ID_KEY

from asyncfl.config.flower import NodeConfigValue, node_config_of
from asyncfl.config.schema import Scenario
from asyncfl.seeding import stream
from asyncfl.sim.profiles import MEGABIT_BYTES, draw_profiles


def node_configs(s: Scenario) -> list[dict[str, NodeConfigValue]]:
    """The ``node_config`` of every node of ``s``'s population, in client order."""
    n = s.data.clients
    template: Mapping[str, NodeConfigValue] = s.flower.node_config if s.flower is not None else {}
    simulation = [{PARTITION_ID_KEY: i, NUM_PARTITIONS_KEY: n} for i in range(n)]
    if not template:  # nothing to draw: the profiles are drawn only for a template that may name them
        return simulation
    profiles = draw_profiles(s.population, n, stream(s.seed, "profiles"))
    configs = []
    for i, simulated in enumerate(simulation):
        profile = profiles[i]
        values = {
            **simulated,
            "samples-per-s": float(profile.samples_per_s),
            "uplink-mbps": float(profile.uplink_bytes_per_s) / MEGABIT_BYTES,
            "downlink-mbps": float(profile.downlink_bytes_per_s) / MEGABIT_BYTES,
            "latency-s": float(profile.latency_s),
        }
        configs.append({**simulated, **node_config_of(template, values)})
    return configs
