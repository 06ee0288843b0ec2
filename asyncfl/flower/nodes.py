"""The Flower nodes of a run: one per client of the scenario's population, each calling the user's ClientApp
in this process with its own ``Context`` (:class:`FlowerNodes`), and what a message costs in virtual time.

**Nodes.** Client ``i`` is the node with id ``NODE_ID_BASE + i`` (``node_id(i)``; 2**32 + i, so a node id never
meets Flower's SuperLink id 1 nor the ServerApp's 0, and the client reads back as ``node_id - 2**32``).  As in
Flower's simulation (``flwr/server/superlink/fleet/vce/vce_api.py``, ``_register_node_info_stores``) its
``node_config`` holds ``partition-id`` = i and ``num-partitions`` = the population size; its ``Context`` (state
RecordDict, the run config) lives across rounds.

**A call** (:meth:`FlowerNodes.call`) runs the ClientApp as Flower's simulation worker does
(``vce_api.worker``): an exception becomes an error reply, code ``CLIENT_APP_RAISED_EXCEPTION`` and reason
``"<class '...'>:<'message'>"``, and the node's Context is kept as it was before the call (Flower stores the
updated Context only after a call that returned).  The ClientApp gets its own copy of the message, as a SuperNode
gets one over the wire: a ClientApp (or a mod, such as Flower's ``secaggplus_mod``, which pops the stage key of its
ConfigRecord) may change what it received without changing the pushed message, whose bytes are the download's, nor
the other nodes' messages (Flower's SecAgg+ workflow pushes one content object to every node).  The copy shares
the arrays' bytes (immutable), so it costs the records' structure only.

**The compute-work contract** (:func:`samples_processed`): a task's compute seconds are the samples it
processed over the client's ``samples_per_s`` (times the per-task jitter, as for a native task), where

    samples processed = the reply's ``flower.work.examples`` metric (default ``num-examples``)
                        x local epochs (``flower.work.epochs``, default ``local-epochs``: read from the
                          message's ConfigRecord, else the run config, else 1; train messages only)

An evaluate or query message processes its examples once (epochs are a training notion).  A reply with no
such metric, or an error reply, processed 0 samples.  The contract reads the messages only, so the clock is
deterministic; it never measures CPU time.  A reply asyncfl cannot read ends the run with a
:class:`~asyncfl.errors.ConfigError` naming the client, the message type and what is allowed
(:meth:`FlowerNodes.check_reply`): a ClientApp that returns something other than a Message (``None``: a forgotten
``return``), or examples that are not a whole number >= 0 (NaN, inf, -5, 2.5).

**Bytes** (:func:`message_bytes`): the sum of Flower's own ``count_bytes()`` over the message's ArrayRecords,
MetricRecords and ConfigRecords (each array's serialized .npy bytes, header included, plus the key names; 8 bytes a
number, a string its length; an empty list only its key, where Flower's own count fails): what a download of the
pushed message and an upload of the reply carry over the client's link.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

from flwr.app import ConfigRecord, Context, Error, Message, MessageType, RecordDict
from flwr.common.constant import NUM_PARTITIONS_KEY, PARTITION_ID_KEY, ErrorCode

from asyncfl.config.flower import FlowerWork
from asyncfl.errors import ConfigError
from asyncfl.flower.evaluation import metric

NODE_ID_BASE = 1 << 32
BROKEN_AFTER = 5  # clients whose ClientApp failed, with no train reply usable yet, that end a run (ClientAppFailures)


def node_id(client: int) -> int:
    """The Flower node id of client ``client`` (its index in the population)."""
    return NODE_ID_BASE + client


def client_of(node: int) -> int:
    """The client index of Flower node ``node`` (the inverse of :func:`node_id`)."""
    return node - NODE_ID_BASE


def error_reason(error: BaseException) -> str:
    """The reason of an error reply, written as Flower's simulation worker writes it."""
    return str(type(error)) + ":<'" + str(error) + "'>"


class FlowerNodes:
    """One Flower node per client, each with its own Context, calling ``client_app`` in this process."""

    def __init__(
        self,
        client_app: Any,
        num_clients: int,
        run_id: int,
        run_config: Mapping[str, Any] | None = None,
        work: FlowerWork | None = None,
        node_configs: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """``node_configs``: each node's node_config (:func:`asyncfl.flower.node_config.node_configs`); None: what
        Flower's simulation sets, ``partition-id`` and ``num-partitions``."""
        self.client_app = client_app
        self.run_config = dict(run_config or {})
        self.work = work if work is not None else FlowerWork()
        self.failures = ClientAppFailures(num_clients)  # train replies, as the Grid or the K-async learner reads them
        self.contexts = [
            Context(
                run_id=run_id,
                node_id=node_id(i),
                node_config=(
                    dict(node_configs[i]) if node_configs else {PARTITION_ID_KEY: i, NUM_PARTITIONS_KEY: num_clients}
                ),
                state=RecordDict(),
                run_config=dict(self.run_config),
            )
            for i in range(num_clients)
        ]

    @property
    def node_ids(self) -> Sequence[int]:
        return [context.node_id for context in self.contexts]

    def __len__(self) -> int:
        return len(self.contexts)

    def call(self, client: int, message: Message) -> Message:
        """Run the ClientApp of ``client`` on ``message``; its reply, or Flower's error reply if it raised."""
        kept = self.contexts[client]
        context = copy.deepcopy(kept)  # Flower keeps the Context a call updated only if the call returns
        received = copy.deepcopy(message)  # what a SuperNode receives: its own copy (see the module docstring)
        try:
            reply = self.client_app(received, context)
        except Exception as error:  # as flwr's vce_api.worker: the exception becomes the reply
            return Message(
                Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=error_reason(error)), reply_to=message
            )
        self.check_reply(client, message, reply)
        self.contexts[client] = context
        return reply

    def check_reply(self, client: int, message: Message, reply: Any) -> None:
        """Refuse a reply asyncfl cannot read (a ClientApp's mistake, so a :class:`ConfigError` naming it): not a
        Message (e.g. a function that forgot its ``return``), or whose examples metric is not a whole number >= 0
        (it times the task and weights the means: NaN, inf, negative or fractional examples mean nothing)."""
        kind = message.metadata.message_type
        where = f"the ClientApp of client {client} (node {node_id(client)}), replying to a message of type {kind!r}"
        if not isinstance(reply, Message):
            raise ConfigError(f"{where}: returned {type(reply).__name__}; allowed: a flwr.app.Message")
        if reply.has_error() or not reply.has_content():
            return
        examples = metric(reply.content, self.work.examples)
        if examples is not None and not _whole_count(examples):
            raise ConfigError(
                f"{where}: {self.work.examples}={examples!r}; allowed: a whole number of examples >= 0 "
                "(the metric flower.work.examples names)"
            )

    def samples_processed(self, message: Message, reply: Message) -> int:
        """Samples one task processed, by the compute-work contract of this module."""
        if reply.has_error() or not reply.has_content():
            return 0
        examples = metric(reply.content, self.work.examples)
        if examples is None:
            return 0
        epochs = 1.0
        if message.metadata.message_type.split(".")[0] == MessageType.TRAIN:
            epochs = self.epochs(message)
        return max(0, round(float(examples) * epochs))

    def epochs(self, message: Message) -> float:
        """Local epochs a train message asks for: its ConfigRecords, else the run config, else 1."""
        key = self.work.epochs
        if message.has_content():
            for record in message.content.values():
                if isinstance(record, ConfigRecord) and key in record:
                    return float(record[key])
        return float(self.run_config.get(key, 1))


def _whole_count(value: Any) -> bool:
    """Is ``value`` a finite whole number >= 0 (10 and 10.0 are; True, NaN, inf, -1 and 2.5 are not)?"""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value >= 0 and float(value).is_integer()


class ClientAppFailures:
    """Ends a run whose ClientApp looks broken rather than let it fail forever (a typo in ``train`` made a K-async
    run write events until the disk filled): once the train messages of ``min(population, BROKEN_AFTER)`` different
    clients have failed (the ClientApp raised, or its reply could not be used) and no train reply has been usable
    yet, :meth:`note` raises a :class:`ConfigError` with the first failure's reason.  One usable reply turns the
    rule off: a run where some clients fail goes on, as Flower's would."""

    def __init__(self, num_clients: int) -> None:
        self.needed = min(num_clients, BROKEN_AFTER)
        self.usable = False
        self.failed: dict[int, str] = {}  # client -> its first failure's reason, in order of failure

    def note(self, client: int, failure: str | None) -> None:
        """A train reply of ``client``: usable (``failure`` None) or failed for ``failure``."""
        if failure is None:
            self.usable = True
        if self.usable:
            return
        self.failed.setdefault(client, failure)
        if len(self.failed) >= self.needed:
            first = next(iter(self.failed.values()))
            raise ConfigError(
                f"flower.client_app: the ClientApp failed on the train messages of clients {sorted(self.failed)} and "
                f"no train reply was usable yet; the first failure: {first}; allowed: a ClientApp whose train "
                "replies with the model's arrays (events.jsonl's fail events hold every reason)"
            )


def message_bytes(message: Message) -> int:
    """Bytes a message carries over a link: Flower's ``count_bytes()`` of its array, metric and config records
    (0 for an error reply)."""
    if message.has_error() or not message.has_content():
        return 0
    return sum(
        _config_bytes(record) if isinstance(record, ConfigRecord) else record.count_bytes()
        for record in message.content.values()  # array, metric and config records (each has count_bytes)
    )


def _config_bytes(record: ConfigRecord) -> int:
    """Flower's ``ConfigRecord.count_bytes()``, with an empty list counted as 0 bytes (plus its key): flwr 1.42's
    raises IndexError on one (``configrecord.py``, ``v[0]``), and Flower's SecAgg+ stages send empty lists (e.g. no
    dead nodes to unmask)."""
    if not any(isinstance(value, list) and not value for value in record.values()):
        return record.count_bytes()
    return sum(
        len(key) if isinstance(value, list) and not value else ConfigRecord({key: value}).count_bytes()
        for key, value in record.items()
    )
