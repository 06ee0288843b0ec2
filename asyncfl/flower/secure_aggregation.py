"""Flower's secure aggregation (the SecAgg+ and SecAgg workflows of ``flwr.server.workflow``, with the client mods
of ``flwr.client.mod``) on the virtual clock: which of a ServerApp's train rounds trips are protocol stages.

One federated round of SecAgg+ is four ``send_and_receive`` calls of train messages, one per stage
(``secaggplus_workflow.py``: setup, share keys, collect masked vectors, unmask), each message naming its stage in
the ConfigRecord ``secaggplus_configs``.  Each stage is timed as any round trip (its messages' bytes down and up;
compute by the work contract of :mod:`asyncfl.flower.nodes`: only the collect-masked-vectors replies carry the
client's examples, so only that stage computes), and the stages of one round make one aggregation record
(:mod:`asyncfl.flower.recording`).  A stage that is not the one after the previous (the workflow halted: too few
nodes left for the reconstruction threshold, and the next round starts at setup again) ends the previous round.
"""

from __future__ import annotations

from collections.abc import Iterable

from flwr.app import Message
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage

STAGES = Stage.all()  # setup, share_keys, collect_masked_vectors, unmask: the order every round runs them
COLLECT = Stage.COLLECT_MASKED_VECTORS  # the stage whose replies are the updates (masked) and do the training
LAST = Stage.UNMASK  # the stage after which the workflow aggregates


def stage_of(messages: Iterable[Message]) -> str | None:
    """The SecAgg+ stage the messages of one round trip carry (None: not a secure-aggregation stage)."""
    for message in messages:
        if message.has_content():
            record = message.content.config_records.get(RECORD_KEY_CONFIGS)
            stage = record.get(Key.STAGE) if record is not None else None
            return stage if stage in STAGES else None
    return None


def continues(previous: str | None, stage: str | None) -> bool:
    """Whether a round trip of ``stage`` goes on with the protocol whose last stage was ``previous`` (None: no
    protocol open, or no stage)."""
    return previous is not None and previous != LAST and stage == STAGES[STAGES.index(previous) + 1]


__all__ = ["COLLECT", "LAST", "STAGES", "continues", "stage_of"]
