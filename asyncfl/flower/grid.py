"""The virtual-time Grid: what a Flower ServerApp talks to, with the scenario's population as its nodes and
asyncfl's SimPy clock as its time.

A pushed message is one task of the timing world (:mod:`asyncfl.sim.clients`), timed exactly as a native task
with the same bytes and samples: download of the message's bytes over the client's link, compute of the
samples the reply says were processed (:mod:`asyncfl.flower.nodes`, the compute-work contract), upload of the
reply's bytes, with availability, battery and jitter as in native runs.  The ClientApp runs in this process when
the task starts; a client that is offline (or too low on battery) then is never called, so its Context does not
change.  A message to a node still busy with an earlier one waits for it, as on a Flower SuperNode (which
handles its messages one at a time).

How a failure reaches the ServerApp, following Flower 1.42:

- a client offline at the start, or that drops or runs out of battery mid-task: an error reply with
  ``ErrorCode.NODE_UNAVAILABLE`` at the moment of the failure, as Flower's SuperLink answers a pull for a node
  that stopped sending heartbeats (``flwr/server/superlink/linkstate/utils.py``,
  ``create_message_error_unavailable_res_message``);
- a ClientApp that raises: an error reply with ``ErrorCode.CLIENT_APP_RAISED_EXCEPTION`` (as
  ``flwr/server/superlink/fleet/vce/vce_api.py``'s ``worker``), after the download and the upload of the
  (empty) error; the task counts as failed, reason ``client_app``, and events.jsonl carries the exception (once
  the train messages of 5 clients, or all of a smaller population, failed so with no train reply in yet, the run
  ends with a :class:`~asyncfl.errors.ConfigError` quoting the first: :class:`~asyncfl.flower.nodes.ClientAppFailures`);
- a reply not back by the ``timeout`` of :meth:`VirtualGrid.send_and_receive`: no reply at all, as
  ``InMemoryGrid.send_and_receive`` returns what it pulled before its deadline.  The task runs on (a SuperNode
  does not stop its ClientApp); it counts as ``late`` and failed with reason ``deadline`` at the round that gave
  up on it, its end is logged as a ``fail`` event with reason ``deadline``, and its reply is never returned: a later
  :meth:`pull_messages` of its id gets Flower's ``MESSAGE_UNAVAILABLE`` error reply (Flower would still hand it
  over until its TTL; no strategy of flwr's asks again);
- a reply that would come after its message's ttl: that error reply, at the ttl (:mod:`asyncfl.flower.link_state`).

Untimed evaluation (``flower.evaluation: untimed``, asyncfl's option, not Flower's): a send_and_receive whose
messages are all evaluate messages is answered at once, every node's ClientApp called at the current virtual time
whatever its availability, battery or busy state, and the clock does not move; no task is timed or logged.  It is
the measurement a K-async Flower run makes (:mod:`asyncfl.flower.k_async` evaluates untimed), so a study can
compare the two without the evaluation round trips' cost on one side only.

Secure aggregation (Flower's SecAgg+ workflow): its four stages are four send_and_receive calls of train messages
in one federated round (:mod:`asyncfl.flower.secure_aggregation`); each is timed as any round trip, the round's
version (:attr:`VirtualGrid.trained`) moves on after the last (unmask), and the scenario's ``stop:`` is asked only
before a round's first trip.  Flower's DefaultWorkflow polls :meth:`get_node_ids` from a thread in real time: those
calls answer the same list and change nothing (see the method).

Legacy apps (``ServerApp(server_fn=...)`` with a ``flwr.server.strategy``): Flower's ``Server`` calls
:meth:`send_and_receive` from a thread pool, one message a call; the strategy's ``configure_fit`` /
``configure_evaluate`` announce each such round (:meth:`VirtualGrid.expect`) and its calls are answered in the
announced order, pushed at one virtual time and closed as one round (:mod:`asyncfl.flower.threads`).

Stopping: once the scenario's ``stop:`` ends the run (asked before each round's first train trip), the Grid ends
the rounds the way a Flower run without nodes to ask would: every later :meth:`send_and_receive` returns no reply
at once, runs nothing, moves no virtual time and is not recorded, and :meth:`get_node_ids` keeps answering the
nodes (a strategy's ``sample_nodes`` would wait forever for none).  No exception passes through the ServerApp:
``Strategy.start`` goes through its remaining rounds with nothing to aggregate, returns the last aggregated arrays,
and the app's own code after it runs (its final model is saved as the app saves it).

Time: ``timeout`` is a virtual deadline counted from the push (None or inf: none; a negative or NaN one is refused
with a :class:`~asyncfl.errors.ConfigError`, as is a message whose ``ttl`` is not above 0); :meth:`send_and_receive`
advances the clock to the moment it returns (every reply in, or the deadline).  Which nodes :meth:`get_node_ids`
lists, the ttl, pulls and timestamps follow Flower's link state (:mod:`asyncfl.flower.link_state`).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import simpy
from flwr.app import Error, Message, MessageType, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.serverapp import Grid
from flwr.supercore.run import Run, RunNotRunningException
from flwr.supercore.task_identity import TaskIdentity

from asyncfl.config.flower import OFFLINE_GRACE_S
from asyncfl.errors import ConfigError
from asyncfl.flower.legacy_rounds import LegacyRounds
from asyncfl.flower.link_state import (
    MessageTimes,
    NodeView,
    deadline_of,
    deliver,
    deliverable,
    expiry_of,
    message_ids_asked,
    stamp_reply,
    unavailable_reply,
)
from asyncfl.flower.nodes import FlowerNodes, client_of, message_bytes
from asyncfl.flower.secure_aggregation import COLLECT, LAST, continues, stage_of
from asyncfl.flower.threads import Batch, ThreadCalls
from asyncfl.sim.clients import DoneWork, EventSink, TaskPlan, Work, phase_seconds, plan_task, run_task
from asyncfl.sim.servers import ClosedRound, RoundHandoff
from asyncfl.sim.servers.sync import closes

UNAVAILABLE = "Error: Node Unavailable - the client went offline or ran out of battery (asyncfl virtual time)"
# get_node_ids calls with no push between them that could never be answered better (every node listed, or the
# unlisted ones never back) end the run once there are more than WAITING_LIMIT of them over at least WAITING_S real
# seconds: Flower's sample_nodes sleeps a real second between its tries, where an app asking a few times in a row
# for its own reasons does not
WAITING_LIMIT = 5
WAITING_S = 4.0
# a get_node_ids call at least SLEPT_S real seconds after the one before it, with no push between, is a waiting
# loop's retry (Flower's sample_nodes sleeps a real second between its tries): the clock moves to when a node is next
# listed.  Calls in quick succession are an app asking twice for its own reasons (Flower's FedAvg counts the nodes,
# then samples them, every round): the same answer at the same virtual time, as on a SuperLink
SLEPT_S = 0.5


@dataclass
class Task:
    """One pushed message in the timing world: its plan, and the reply the ServerApp gets (None: none)."""

    message: Message
    plan: TaskPlan
    reply: Message
    train: bool
    samples: int = 0
    arrives: float = math.nan  # when the ServerApp can pull its reply: the plan's end, or the message's expiry

    def __post_init__(self) -> None:
        if math.isnan(self.arrives):
            self.arrives = self.plan.end

    @property
    def expired(self) -> bool:
        """Its reply came after the message's ttl: the ServerApp gets Flower's expired error reply instead."""
        return self.plan.end > self.arrives


@dataclass
class Outcome:
    """What one :meth:`VirtualGrid.send_and_receive` gave the ServerApp: the closed round (the timing facts, as a
    sync server closes one), the tasks in push order and the replies returned (``returned``).  Secure aggregation,
    as the Grid sees it (the one place that follows the protocol): ``stage``, the SecAgg+ stage this trip ran
    (None: not one), and ``halted``, whether the protocol of the round before stopped short of its last stage
    (this trip is not the stage after its last one)."""

    closed: ClosedRound
    tasks: list[Task]
    returned: list[Task] = field(default_factory=list)
    stage: str | None = None
    halted: bool = False


class VirtualGrid(LegacyRounds, Grid):
    """A Flower ``Grid`` on asyncfl's virtual clock ``env`` (see the module's docstring).  Every
    :meth:`send_and_receive` hands its :class:`Outcome` to the run loop through ``rounds`` before it returns, as a
    native server hands over a closed round (:class:`~asyncfl.sim.servers.RoundHandoff`; the loop is a process of
    ``env``: :func:`~asyncfl.runner.simulation.run_loop`); the loop's answer, or ``should_stop()`` (a stop the
    app's server-side evaluation reached), is read before each round's first push of train messages (True: the run
    is over, :attr:`stopped`, and this and every later send_and_receive returns no reply); ``timed_evaluation``:
    False answers evaluate rounds untimed (see the module's docstring)."""

    def __init__(
        self,
        nodes: FlowerNodes,
        clients: Any,
        work: Work,
        log: EventSink,
        run_id: int,
        env: simpy.Environment,
        rounds: RoundHandoff,
        should_stop: Callable[[], bool] = lambda: False,
        timed_evaluation: bool = True,
        offline_grace_s: float = OFFLINE_GRACE_S,
        start_s: float = 0.0,
    ) -> None:
        self.env, self.rounds = env, rounds
        self.nodes, self.clients, self.work, self.log = nodes, clients, work, log
        self.should_stop = should_stop
        self.told_stop = False  # the run loop answered a handed-over trip with stop
        self.timed_evaluation = timed_evaluation
        self._run = Run.create_empty(run_id)
        self.trained = 0  # train rounds so far (a SecAgg+ round's four trips count once): the next round's version
        self.sent = 0  # messages pushed so far (their ids)
        self.tasks: dict[str, Task] = {}  # message id -> task, until its reply is pulled or given up
        self.times = MessageTimes(start_s)  # start_s: clock.start_time in seconds since the epoch (0: none)
        # the virtual second each message was created (create_message) or first pushed: its created_at, unrounded
        self.created_s: weakref.WeakKeyDictionary[Message, float] = weakref.WeakKeyDictionary()
        self.view = NodeView(nodes.node_ids, [device.availability for device in clients], offline_grace_s)
        self.waiting = 0  # get_node_ids calls since the last push that could never be answered better
        self.waiting_since = 0.0  # the real time of the first of them
        self.asked = False  # get_node_ids was called since the last push
        self.asked_at = -math.inf  # the real time of the last get_node_ids call (see SLEPT_S)
        # bytes of each content pushed in the batch at hand: Flower's strategies push one RecordDict to every node,
        # and no ClientApp changes it (each gets a copy: FlowerNodes.call), so it is counted once
        self.content_bytes: dict[int, int] = {}
        self.stage: str | None = None  # the SecAgg+ stage last run, while its round goes on (secure_aggregation)
        self.owner = threading.get_ident()  # the thread that runs the ServerApp
        self.threads = ThreadCalls()  # a legacy app's pool threads (asyncfl.flower.threads)
        self.batch: Batch | None = None  # the legacy round whose calls the pool threads make
        self.closed = False
        self.stopped = False  # the scenario's stop: ended the run (see the module's docstring)
        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run_id, SUPERLINK_NODE_ID

    # --- what a Grid must honour (flwr/serverapp/grid/grid.py) ---------------------------------------------
    def set_run(self, run: Run) -> None:
        if not isinstance(run, Run):
            raise TypeError(f"`run` must be an instance of Run, got {type(run).__name__}")
        self._run = run

    @property
    def run(self) -> Run:
        return Run(**vars(self._run))

    def create_message(
        self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str, ttl: float | None = None
    ) -> Message:
        """A message created now in virtual time: its ``created_at`` (:class:`MessageTimes`) stays at its push, and
        its ttl counts from it."""
        message = Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)
        self.created_s[message] = now = self.env.now
        message.metadata.created_at = self.times.created_at(now)
        return message

    def get_node_ids(self) -> Iterable[int]:
        """The nodes Flower's link state lists now: online, or offline for less than ``offline_grace_s``
        (:class:`~asyncfl.flower.link_state.NodeView`).  Asked again with no push between, after the app slept
        (``SLEPT_S`` real seconds) while a node is not listed, the clock first moves to the next time one is (a
        ServerApp's waiting loop, in virtual time); asked again at once, the same nodes at the same time."""
        if threading.get_ident() != self.owner:
            # Flower's legacy DefaultWorkflow also asks from a thread of its own every 5 real seconds
            # (flwr/server/compat/app_utils.py, _update_client_manager): its answer changes nothing, and it is not
            # the ServerApp waiting; after the run, RunNotRunningException ends that thread, as Flower's grid ends it
            if self.closed:
                raise RunNotRunningException
            return self.view.listed(self.env.now, self.trained)
        self.threads.raise_kept()
        if self.stopped:  # after the stop: every node, so a strategy's sampling never waits and the app returns
            return list(self.nodes.node_ids)
        listed = self.view.listed(self.env.now, self.trained)
        retry = self.asked and time.monotonic() - self.asked_at >= SLEPT_S
        self.asked_at = time.monotonic()
        if retry and len(listed) < len(self.nodes):
            back = self.view.next_listed(self.env.now, self.trained)
            if math.isfinite(back):
                self._advance(back)
                return self.view.listed(self.env.now, self.trained)
        self.asked = True
        self._count_waiting()
        return listed

    def _count_waiting(self) -> None:
        """One more call that no waiting could answer better; too many of them, for too long: the ServerApp waits
        for nodes that never come, and is stopped rather than left sleeping forever."""
        if self.waiting == 0:
            self.waiting_since = time.monotonic()
        self.waiting += 1
        if self.waiting > WAITING_LIMIT and time.monotonic() - self.waiting_since >= WAITING_S:
            raise ConfigError(
                f"the ServerApp keeps waiting for nodes: it needs more than the {len(self.nodes)} clients of the "
                "population (data.clients) or more than ever come online together; allowed: a strategy whose "
                f"min_available_nodes / min_train_nodes / min_evaluate_nodes is at most {len(self.nodes)}"
            )

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        """Push ``messages`` now; their ids, but for those to a node the Grid does not have, dropped with Flower's
        log line (as its link state's ``store_message_ins``)."""
        self.content_bytes.clear()
        return [self._push(message).message.metadata.message_id for message in deliverable(messages, len(self.nodes))]

    def pull_messages(
        self, reply_to_message_ids: Iterable[str] | None = None, *, message_ids: Iterable[str] | None = None
    ) -> Iterable[Message]:
        """The replies to the messages asked (flwr 1.42: ``pull_messages(ids)``; 1.43: ``reply_to_message_ids`` or
        ``message_ids``; none given: every message pushed and not pulled yet) that are in by now; when none is, the
        clock first advances to the earliest of them (a pull loop's waiting, in virtual time).  An id the Grid does
        not hold (never pushed, pulled before, or given up at a deadline) gets Flower's ``MESSAGE_UNAVAILABLE``
        error reply."""
        ids = message_ids_asked(reply_to_message_ids, message_ids)
        ids = list(self.tasks) if ids is None else ids
        now = self.env.now
        stamp = self.times.created_at(now)
        unknown = [unavailable_reply(i, self._run.run_id, stamp) for i in ids if i not in self.tasks]
        asked = [self.tasks[i] for i in dict.fromkeys(ids) if i in self.tasks]
        if asked and not unknown and all(task.arrives > now for task in asked):
            self._advance(min(task.arrives for task in asked))
        ready = [task for task in asked if task.arrives <= self.env.now]
        for task in ready:
            del self.tasks[task.message.metadata.message_id]
        return unknown + [deliver(task.reply, self.env.now, self.times) for task in ready]

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        """Push ``messages`` now and return the replies in by the virtual deadline ``now + timeout`` (None: all),
        in arrival order; the clock stands at the moment of return (the last reply, or the deadline).  A call from
        another thread is one of a legacy app's batch (:meth:`expect`)."""
        messages = list(messages)
        if threading.get_ident() != self.owner:
            return self._batch_call(messages, timeout)
        self.threads.raise_kept()
        deadline_of(timeout)  # before anything is pushed: a refused call changes nothing
        if self.stopped:
            return []
        kinds = {m.metadata.message_type.split(".")[0] for m in messages}
        train = MessageType.TRAIN in kinds
        stage = stage_of(messages) if train else None  # a SecAgg+ stage: one of its round's four trips
        halted = self._halted(stage)
        if messages and not self.timed_evaluation and kinds == {MessageType.EVALUATE}:
            return self._evaluate_untimed(messages, halted)
        if train and self.stage is None and self.stop_due():  # a round's first trip only
            self.stopped = True
            return []
        t0 = self.env.now
        deadline_s = deadline_of(timeout)
        self.content_bytes.clear()
        updates = train and stage in (None, COLLECT)  # replies that are updates: clients.csv's participations
        tasks = [self._push(message, updates) for message in deliverable(messages, len(self.nodes))]
        outcome = self._finish(t0, t0 + deadline_s, tasks, train, stage)
        outcome.halted = halted
        self.hand_over(outcome)
        return [deliver(task.reply, task.arrives, self.times) for task in outcome.returned]

    def hand_over(self, outcome: Outcome) -> None:
        """Hand ``outcome`` to the run loop through SimPy, as a native server hands over a closed round, and play
        this moment's events until the loop has answered (it answers at once: :func:`happen_now`); an error of the
        loop's is raised here, out of ``env.step``."""
        answer = self.rounds.close(outcome)
        while not answer.triggered:
            if self.env.peek() > self.env.now:
                raise RuntimeError("the run loop did not answer a trip the Grid handed over (it is not running)")
            self.env.step()
        self.told_stop = self.told_stop or bool(answer.value)

    def stop_due(self) -> bool:
        """Whether the run is over (asked before a round's first train trip): the loop said so, or a stop rule
        fired outside it (the app's server-side evaluation)."""
        return self.told_stop or self.should_stop()

    def _halted(self, stage: str | None) -> bool:
        """Whether the SecAgg+ round under way stopped short of its last stage (this trip is not its next one)."""
        halted = self.stage is not None and not continues(self.stage, stage)
        if halted:
            self.trained, self.stage = self.trained + 1, None  # the workflow halted: that round is over
        return halted

    def _finish(self, t0: float, deadline: float, tasks: list[Task], train: bool, stage: str | None) -> Outcome:
        """Close the round of ``tasks`` pushed at ``t0`` (at the last end, or ``deadline``): the clock there, the
        tasks forgotten, the version moved on after a round's last train trip."""
        close_at = min(deadline, max((task.arrives for task in tasks), default=t0))
        self._advance(close_at)
        outcome = self._close(t0, close_at, tasks)
        outcome.stage = stage
        for task in tasks:
            self.tasks.pop(task.message.metadata.message_id, None)  # given up or returned: never pulled again
        if train and stage in (None, LAST):  # a round's last trip: the next one trains a new version
            self.trained += 1
        self.stage = stage if stage != LAST else None
        return outcome

    def _evaluate_untimed(self, messages: Sequence[Message], halted: bool) -> list[Message]:
        """Every message answered now by its node's ClientApp, in push order; nothing is timed (a task of zero
        length stands for each answer in the outcome the run loop gets).  ``halted``: see :class:`Outcome`."""
        tasks = [self._answer_now(message, self.env.now) for message in messages]
        self.hand_over(self._untimed_outcome(tasks, halted))
        return [deliver(task.reply, self.env.now, self.times) for task in tasks]

    def _answer_now(self, message: Message, now: float) -> Task:
        """``message`` answered at ``now`` by its node's ClientApp, untimed (a task of zero length)."""
        self._identify(message, now)
        client = client_of(message.metadata.dst_node_id)
        reply = self.nodes.call(client, message)
        stamp_reply(reply, message, now, self.times)
        return Task(message, TaskPlan(client, self.trained, 0, now, [], now), reply, train=False)

    def _untimed_outcome(self, tasks: list[Task], halted: bool) -> Outcome:
        now = self.env.now
        closed = ClosedRound(self.trained + 1, now, now, selected=[t.plan.client for t in tasks])
        return Outcome(closed, tasks, returned=list(tasks), halted=halted)

    def _download_bytes(self, message: Message) -> int:
        """:func:`message_bytes` of a pushed message, once per content object of the batch at hand."""
        key = id(message.content) if message.has_content() else None
        if key is None:
            return message_bytes(message)
        if key not in self.content_bytes:
            self.content_bytes[key] = message_bytes(message)
        return self.content_bytes[key]

    def close(self) -> None:
        """The run is over: a thread of the ServerApp still asking for nodes is told so."""
        self.closed = True

    # --- the timing world -------------------------------------------------------------------------------
    def _identify(self, message: Message, now: float) -> float:
        """A pushed message's id (deterministic, unlike uuid4); the virtual second it was created, which its
        ``created_at`` says.  One built by the app itself (``Message(...)``, as Flower's strategies and workflows
        build them) carries real wall-clock time, and the Grid cannot know when in virtual time the app built it: it
        is stamped ``now``, at its first push; one from :meth:`create_message` keeps its stamp."""
        self.waiting, self.asked = 0, False
        metadata = message.metadata
        metadata.__dict__["_message_id"] = str(uuid.UUID(int=self.sent))
        self.sent += 1
        created_s = self.created_s.setdefault(message, now)
        metadata.created_at = self.times.created_at(created_s)
        if not metadata.ttl > 0:  # NaN too; Flower's SuperLink refuses ttl <= 0 (flwr/server/utils/validator.py)
            raise ConfigError(
                f"the ServerApp pushed a message with ttl={metadata.ttl!r}; allowed: ttl > 0 seconds (inf: no expiry)"
            )
        return created_s

    def _push(self, message: Message, update: bool | None = None) -> Task:
        """Time ``message`` as a task; ``update``: whether its reply is an update (None: a train message's is),
        the only tasks clients.csv's ``participations`` counts when they deliver."""
        now = self.env.now
        created_s = self._identify(message, now)
        metadata = message.metadata
        client = client_of(metadata.dst_node_id)
        device = self.clients[client]
        start = max(now, device.busy_until)  # a SuperNode handles one message at a time
        train = metadata.message_type.split(".")[0] == MessageType.TRAIN
        called: list[tuple[Message, int]] = []  # (reply, samples processed), once the ClientApp has run

        def perform(plan: TaskPlan) -> DoneWork:
            """The ClientApp runs when its task starts (never for a client that cannot start it), as in K-async
            runs on Flower clients; its reply times the task (Work.perform)."""
            reply = self.nodes.call(client, message)
            samples = self.nodes.samples_processed(message, reply)
            called.append((reply, samples))
            error = reply.error.reason if reply.has_error() else None
            if train:
                self.nodes.failures.note(client, error)  # a ClientApp failing everywhere ends the run
            return DoneWork(samples, self._download_bytes(message), message_bytes(reply), error)

        plan = plan_task(device, replace(self.work, perform=perform), start, self.trained)
        reply, samples = called[0] if called else (None, 0)
        if reply is None or (plan.failure is not None and plan.failure != "client_app"):
            reply = Message(Error(code=ErrorCode.NODE_UNAVAILABLE, reason=UNAVAILABLE), reply_to=message)
        arrives = min(plan.end, expiry_of(message, created_s))
        if plan.end > arrives:  # in after its ttl: Flower's link state answers a pull from then on with its error
            reply = unavailable_reply(metadata.message_id, self._run.run_id, self.times.created_at(arrives))
        else:
            stamp_reply(reply, message, made_at(plan), self.times)
        task = Task(message, plan, reply, train, samples, arrives)
        self.tasks[metadata.message_id] = task
        counted = train if update is None else update
        self.env.process(
            run_task(self.env, device, plan, self.log) if counted else _no_update(self.env, device, plan, self.log)
        )
        return task

    def _advance(self, until: float) -> None:
        """Play every event up to and including ``until`` (the arrivals exactly at a deadline count)."""
        env = self.env
        while env.peek() <= until:
            env.step()
        if until > env.now and math.isfinite(until):
            env.run(until=until)

    def _close(self, t0: float, close_at: float, tasks: Sequence[Task]) -> Outcome:
        """The round as a sync server closes it (one rule: :func:`~asyncfl.sim.servers.sync.closes`): replies in by
        ``close_at`` returned (failures as error replies), tasks still running given up (late, failed ``deadline``
        here; they run on) at ``close_at``, or at their message's expiry, whose error reply is returned (the expiry
        is a deadline of the message's own)."""
        closed = ClosedRound(self.trained + 1, t0, close_at, selected=[client_of_task(t) for t in tasks])
        outcome = Outcome(closed, list(tasks))
        for task in tasks:
            if task.arrives <= close_at:
                outcome.returned.append(task)
            cut = min(close_at, task.arrives)
            if not closes(closed, task.plan, cut):
                self._give_up(closed, task.plan, cut)
        outcome.returned.sort(key=lambda task: task.arrives)  # arrival order (stable: push order on ties)
        closed.received.sort(key=lambda plan: plan.end)
        return outcome

    def _give_up(self, closed: ClosedRound, plan: TaskPlan, cut: float) -> None:
        """A task still running at ``cut``: late, failed ``deadline`` in ``closed``; it runs on, never returned."""
        closed.late += 1
        closed.failures["deadline"] += 1
        closed.failed_clients.append(plan.client)
        closed.timed_out.append((plan.client, cut - plan.start))
        closed.lost_s += sum(phase_seconds(plan, cut))
        closed.lost_compute_s += phase_seconds(plan, cut)[1]
        self.clients[plan.client].stats.late_spans.append((cut, plan.end))
        if plan.failure is None:
            plan.failure = "deadline"  # its end is logged as a failure: the ServerApp never gets it


def _no_update(env: simpy.Environment, device: Any, plan: TaskPlan, log: EventSink):
    """:func:`run_task` for a task whose reply is no update (an evaluate message, a SecAgg+ stage but the one that
    sends the masked vector): delivered, it is no participation (run-files.md: ``participations`` = updates
    delivered), though it counts as an attempt and busy time as every task does."""
    yield from run_task(env, device, plan, log)
    if plan.failure is None:
        device.stats.delivered -= 1
    return plan


def client_of_task(task: Task) -> int:
    return task.plan.client


def made_at(plan: TaskPlan) -> float:
    """When the node made its reply: as its upload starts (it has the reply once its compute ends; a ClientApp's
    error too), or, for a task that failed otherwise, at the failure, where the SuperLink makes its error reply."""
    uploaded = len(plan.phase_starts) == 3 and plan.failure in (None, "client_app")
    return plan.phase_starts[2] if uploaded else plan.end


__all__ = ["Outcome", "Task", "VirtualGrid"]
