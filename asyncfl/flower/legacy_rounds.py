"""A legacy app's rounds on the Grid (:mod:`asyncfl.flower.threads` says how Flower's ``Server`` makes them): the
calls its pool threads make, one message each, answered in the order the strategy announced and closed as one
round.  :class:`LegacyRounds` is the part of :class:`~asyncfl.flower.grid.VirtualGrid` that answers them; it works
on the Grid's own state (its clock, tasks and the run loop it hands rounds to) and is kept apart only to keep the
Grid's module short."""

from __future__ import annotations

from collections.abc import Sequence

from flwr.app import Error, Message
from flwr.common.constant import ErrorCode

from asyncfl.errors import ConfigError
from asyncfl.flower.link_state import deadline_of, deliver, stamp_reply
from asyncfl.flower.threads import MESSAGE_UNAVAILABLE, Batch


class LegacyRounds:
    """The legacy-round methods of :class:`~asyncfl.flower.grid.VirtualGrid` (see the module docstring)."""

    def expect(self, node_ids: Sequence[int], train: bool) -> bool:
        """The ServerApp's thread announces a legacy round: one single-message call per node of ``node_ids``
        comes next, from Flower's pool threads; they are answered in this order, pushed at the current time.
        False once the scenario's stop: ended the run (asked before a train round): the strategy then asks no
        node, and Flower's legacy Server skips such a round, so the app's code after its rounds runs."""
        self.threads.raise_kept()
        if train and not self.stopped and self.stop_due():
            self.stopped = True
        if self.stopped:
            self.batch = None
            return False
        self.content_bytes.clear()
        self.batch = Batch(list(node_ids), self.env.now, train) if node_ids else None
        return True

    def _batch_call(self, messages: list[Message], timeout: float | None) -> list[Message]:
        """One pool thread's call: answered in its turn (see :class:`~asyncfl.flower.threads.Batch`)."""
        calls = self.threads
        with calls.condition:
            try:
                batch = self._batch_of(messages)
                calls.wait_turn(batch, messages[0].metadata.dst_node_id)
                if calls.error is not None:
                    raise RuntimeError("an earlier call of this round failed (raised in the ServerApp's thread)")
                reply = self._answer_in_turn(batch, messages[0], timeout)
            except BaseException as error:
                if calls.error is None:
                    calls.error = error
                raise
            finally:
                calls.condition.notify_all()
        return [reply]

    def _batch_of(self, messages: list[Message]) -> Batch:
        """The batch a pool thread's call belongs to; a call asyncfl cannot place is refused."""
        batch = self.batch
        node = messages[0].metadata.dst_node_id if len(messages) == 1 else None
        if batch is None or node not in batch.nodes or batch.nodes.index(node) < len(batch.tasks):
            raise ConfigError(
                f"send_and_receive was called from a thread of the ServerApp with {len(messages)} message(s) for "
                "no round announced by a legacy strategy's configure_fit / configure_evaluate; allowed: calls from "
                "the ServerApp's own thread, or a flwr.server.Server driving a flwr.server.strategy.Strategy"
            )
        return batch

    def _answer_in_turn(self, batch: Batch, message: Message, timeout: float | None) -> Message:
        """Push ``message`` at the batch's start; its reply, Flower's expired one if not back by the deadline (its
        ttl: the legacy round_timeout); the last call closes the batch as one round."""
        if batch.deadline_s is None:
            batch.deadline_s = min(deadline_of(timeout), float(message.metadata.ttl))
        untimed = not batch.train and not self.timed_evaluation
        task = self._answer_now(message, batch.started) if untimed else self._push(message, batch.train)
        batch.tasks.append(task)
        reply = task.reply
        if task.plan.end > batch.started + batch.deadline_s:
            reply = Message(Error(code=ErrorCode.MESSAGE_UNAVAILABLE, reason=MESSAGE_UNAVAILABLE), reply_to=message)
            stamp_reply(reply, message, batch.started + batch.deadline_s, self.times)
        if batch.turn() is None:
            self.batch = None
            if untimed:
                self.hand_over(self._untimed_outcome(batch.tasks, False))
            else:
                self.hand_over(
                    self._finish(batch.started, batch.started + batch.deadline_s, batch.tasks, batch.train, None)
                )
        return deliver(reply, task.arrives, self.times)
