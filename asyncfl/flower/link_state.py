"""What Flower's SuperLink keeps for a run (``flwr/server/superlink/linkstate``), on the virtual clock: which nodes
it sees online (:class:`NodeView`) and the replies it hands out, with the error replies it makes for a message it
does not hold (:func:`unavailable_reply`) or that expired (``ttl``) before its reply came.

**Which nodes the SuperLink lists.**  A SuperNode sends a heartbeat every ``HEARTBEAT_DEFAULT_INTERVAL`` (30 s);
the link state keeps it online until ``HEARTBEAT_PATIENCE`` (2) intervals after the last one (``online_until``)
and lists a node while ``online_until > now`` (``in_memory_linkstate.py``, ``get_nodes`` and
``_check_and_tag_offline_nodes``).  So a node that went offline at t_off is listed until t_off + g, where g, the
SuperLink's grace, is at most 60 s (a node gone just after a heartbeat) and 0 for a SuperNode that signs off.  Here
g is ``flower.offline_grace_s``: a node is listed at virtual time t when its client is online at some time in
[t - g, t], the time before 0 counting as online (every node of the population registered before the run).  A node
that comes back is listed at once (its first heartbeat).  Online means the client's availability model, eligibility
included (a device not charging or off its unmetered network takes no work: it is not connected, as in production
FL); the battery does not hide a node (a device below its battery threshold keeps running, and reading its level
would change clients.csv).  A round-indexed model (one draw per sync round, no times) lists the nodes online in
the round at hand, whatever g.

**Timestamps** (:class:`MessageTimes`) are Flower's, on the virtual clock: ``created_at`` in seconds since the epoch
and ``delivered_at`` an ISO 8601 string, virtual second s being ``clock.start_time`` + s (without a start time,
1970-01-01 UTC + s).  The ttl is counted from ``created_at``; expiry is decided in virtual seconds (the same
instant, without the rounding of a float near 1.7e9 s).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from logging import ERROR
from typing import Any

from flwr.app import Error, Message, Metadata
from flwr.app.message import make_message
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.common.logger import log as flwr_log

from asyncfl.errors import ConfigError
from asyncfl.flower.nodes import client_of
from asyncfl.flower.threads import MESSAGE_UNAVAILABLE

# Flower's own system message type for the replies its link state makes (flwr.supercore.constant)
SYSTEM_MESSAGE_TYPE = "system"


# the error replies the SuperLink makes itself (utils.py): no pull marks them delivered
SUPERLINK_ERRORS = (ErrorCode.NODE_UNAVAILABLE, ErrorCode.MESSAGE_UNAVAILABLE)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class MessageTimes:
    """Flower's timestamps at virtual times: ``start_s`` is virtual second 0 in seconds since the epoch
    (``clock.start_time``; 0 without one)."""

    start_s: float = 0.0

    def created_at(self, t: float) -> float:
        """``Metadata.created_at`` at virtual time ``t``, as Flower's ``now().timestamp()``."""
        return self.start_s + t

    def delivered_at(self, t: float) -> str:
        """``Metadata.delivered_at`` at virtual time ``t``, as Flower's ``now().isoformat()`` (UTC, microseconds)."""
        return (EPOCH + timedelta(seconds=self.start_s) + timedelta(seconds=t)).isoformat()


class NodeView:
    """The nodes Flower's link state lists at a virtual time (see the module's docstring): ``models[i]`` is
    client i's availability model, ``grace_s`` how long an offline node still looks online."""

    def __init__(self, node_ids: Sequence[int], models: Sequence[Any], grace_s: float) -> None:
        self.node_ids, self.models, self.grace_s = list(node_ids), list(models), grace_s

    def listed(self, t: float, rnd: int) -> list[int]:
        """The ids of the nodes listed at ``t`` (in sync round ``rnd``), in node order."""
        return [node for node, model in zip(self.node_ids, self.models) if self._listed(model, t, rnd)]

    def _listed(self, model: Any, t: float, rnd: int) -> bool:
        if model.online(t, rnd) or model.round_indexed:
            return model.online(t, rnd)
        since = t - self.grace_s
        if since < 0:  # before the run, every node was online: gone at 0 at the earliest
            return True
        return model.next_online(since) <= t

    def next_listed(self, t: float, rnd: int) -> float:
        """The first time after ``t`` at which a node not listed at ``t`` is listed (inf: never, for all we can
        tell: the unlisted ones stay offline, or their model decides per round, which no waiting changes)."""
        listed = set(self.listed(t, rnd))
        return min(
            (
                model.next_online(t)
                for node, model in zip(self.node_ids, self.models)
                if node not in listed and not model.round_indexed
            ),
            default=math.inf,
        )


def message_ids_asked(reply_to_message_ids: Iterable[str] | None, message_ids: Iterable[str] | None) -> list[str]:
    """The ids a pull asks for, by flwr 1.42's ``pull_messages(message_ids)`` or 1.43's
    ``pull_messages(reply_to_message_ids=None, *, message_ids=None)``; None: every message not yet pulled."""
    if reply_to_message_ids is not None and message_ids is not None:
        raise TypeError("pull_messages: give the message ids once (reply_to_message_ids or message_ids)")
    asked = reply_to_message_ids if reply_to_message_ids is not None else message_ids
    return None if asked is None else list(asked)


def deliverable(messages: Iterable[Any], num_nodes: int) -> list[Any]:
    """``messages`` but those to a node the Grid does not have (``num_nodes`` nodes): dropped with the log line of
    Flower's link state (``store_message_ins``: "Invalid destination node ID"), not pushed, given no id."""
    kept = []
    for message in messages:
        node = message.metadata.dst_node_id if isinstance(message, Message) else None
        if node is not None and not 0 <= client_of(node) < num_nodes:
            flwr_log(ERROR, "Invalid destination node ID for Message: %s", node)
            continue
        kept.append(message)
    return kept


def unavailable_reply(message_id: str, run_id: int, created_at: float) -> Message:
    """Flower's reply to a pull of a message it does not hold (never pushed, already pulled, or expired): an error
    ``MESSAGE_UNAVAILABLE`` from the SuperLink, as ``create_message_error_unavailable_ins_message``
    (``flwr/server/superlink/linkstate/utils.py``) makes it, stamped ``created_at`` (epoch seconds)."""
    metadata = Metadata(
        run_id=run_id, message_id=message_id + "-unavailable", src_node_id=SUPERLINK_NODE_ID,
        dst_node_id=SUPERLINK_NODE_ID, reply_to_message_id=message_id, group_id="",
        message_type=SYSTEM_MESSAGE_TYPE, created_at=created_at, ttl=0,
    )  # fmt: skip
    return make_message(metadata=metadata, error=Error(code=ErrorCode.MESSAGE_UNAVAILABLE, reason=MESSAGE_UNAVAILABLE))


def expiry_of(message: Message, created_s: float) -> float:
    """The virtual time a pushed message expires: its creation (virtual second ``created_s``, its ``created_at``)
    + ``ttl`` (Flower's ``message_ttl_has_expired``: expired strictly after)."""
    return created_s + message.metadata.ttl


def deadline_of(timeout: Any) -> float:
    """The virtual seconds a send_and_receive ``timeout`` waits (None: every reply, inf).  Flower's own Grid has
    no check: a negative or NaN timeout returns no reply at once there, and here would move the clock backwards
    or make its times NaN, so both are refused, as a ServerApp's mistake."""
    allowed = "allowed: None (wait for every reply) or a number of virtual seconds >= 0 (inf: no deadline)"
    if timeout is None:
        return math.inf
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise ConfigError(f"send_and_receive: timeout={timeout!r} is not a number; {allowed}")
    if not timeout >= 0:  # NaN too
        raise ConfigError(f"send_and_receive: timeout={timeout!r}; {allowed}")
    return float(timeout)


def stamp_reply(reply: Message, message: Message, made_s: float, times: MessageTimes) -> None:
    """A reply's metadata as the SuperLink would hold it: an id, the message it answers, made at virtual second
    ``made_s`` (``created_at``), with what is left of the message's ttl then (Flower's ``Message(reply_to=...)``:
    the reply expires with the message it answers)."""
    metadata = reply.metadata
    metadata.__dict__["_message_id"] = message.metadata.message_id + "-reply"
    metadata.__dict__["_reply_to_message_id"] = message.metadata.message_id
    metadata.__dict__["_src_node_id"] = message.metadata.dst_node_id
    metadata.__dict__["_dst_node_id"] = message.metadata.src_node_id
    metadata.created_at = times.created_at(made_s)
    metadata.ttl = max(0.0, message.metadata.created_at + message.metadata.ttl - metadata.created_at)


def deliver(reply: Message, at: float, times: MessageTimes) -> Message:
    """``reply`` handed to the ServerApp at virtual time ``at``: a node's reply marked ``delivered_at`` then, as
    Flower's pull marks the replies it hands out (``in_memory_linkstate.py``, ``pull_messages``); the error replies
    the SuperLink makes itself (:data:`SUPERLINK_ERRORS`) stay unmarked (``""``), as there."""
    if not (reply.has_error() and reply.error.code in SUPERLINK_ERRORS):
        reply.metadata.delivered_at = times.delivered_at(at)
    return reply
