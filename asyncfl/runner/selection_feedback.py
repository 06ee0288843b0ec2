"""What the learning world reports to ``server.selection``'s policy after each aggregation.

The run loop (:mod:`asyncfl.runner.simulation`) hands every aggregation to :class:`FeedbackRecorder`, which fills
the policy's :class:`~asyncfl.sim.selection.ClientFeedback` columns (plain numbers: the timing world
stays torch-free) and keeps one log entry per aggregation, so that a resumed run replays what the
policy saw up to its checkpoint and then selects exactly as the run that was never stopped.
"""

from __future__ import annotations

from collections.abc import Sequence

from asyncfl.runner.learning import LearningWorld
from asyncfl.runner.record import AggregationRecord
from asyncfl.sections import Section
from asyncfl.sim.selection import KINDS as SELECTION_KINDS
from asyncfl.sim.selection import ClientFeedback


class FeedbackRecorder:
    """``feedback``: the columns the policy reads (None: its kind reads nothing, and nothing is kept);
    ``log``: per aggregation, what it recorded (in checkpoints as ``feedback_log``)."""

    def __init__(self, scenario: Section, learner: LearningWorld, train_samples: list[int] | None) -> None:
        tags = SELECTION_KINDS[scenario.server.selection.kind].tags
        self.learner, self.every = learner, scenario.eval.every_rounds
        self.reads_accuracy = tags.reads_accuracy and not scenario.timing_only
        self.feedback: ClientFeedback | None = None
        if tags.reads_feedback:
            self.feedback = ClientFeedback.empty(scenario.data.clients, train_samples)
            self.feedback.filled = not scenario.timing_only
        self.log: list[tuple] = []

    def aggregated(self, record: AggregationRecord) -> None:
        """Record one aggregation (its losses are NaN where nothing is trained: ``timing_only``)."""
        if self.feedback is None:
            return
        self.record(
            record.round - 1,  # the version (from 0) the round's tasks started from, as policies count
            list(record.clients),
            [float(loss) for loss in record.train_loss],
            [float(loss) for loss in record.train_loss_sq],
            list(record.task_s),
            self._client_accuracies(record.round),
            record.timed_out,
        )

    def replay(self, saved_log: list, index: int) -> None:
        """Resuming: what aggregation ``index`` reported, as the policy saw it then."""
        if index < len(saved_log):
            self.record(*saved_log[index])

    def state(self) -> dict:
        """The checkpoint's part: the log (empty when the policy reads nothing)."""
        return {} if self.feedback is None else {"feedback_log": list(self.log)}

    def _client_accuracies(self, version: int) -> list[float] | None:
        """The global model's accuracy on every client's test split, at each evaluation, for a selection
        kind that reads it (TiFL's tier accuracies); None otherwise."""
        if not self.reads_accuracy or version % self.every:
            return None
        return [float(a) for a in self.learner.client_accuracies()]

    def record(
        self,
        rnd: int,
        clients: list[int],
        loss: list[float],
        loss_sq: list[float],
        duration_s: list[float],
        accuracy: list[float] | None = None,
        timed_out: Sequence[tuple[int, float]] = (),
    ) -> None:
        """Each aggregated update's losses, round and task duration (download + compute + upload), the
        seconds a task cut by the deadline or cancelled had run (a lower bound of that client's task
        time), and every client's accuracy when it was evaluated, for the policy's next selections."""
        self.log.append((rnd, clients, loss, loss_sq, duration_s, accuracy, list(timed_out)))
        feedback = self.feedback
        if accuracy is not None:
            feedback.accuracy[:] = accuracy
        for client, seconds in timed_out:
            feedback.duration_s[client] = seconds
            feedback.timed_out_version[client] = rnd
        feedback.loss[clients] = loss
        feedback.loss_sq[clients] = loss_sq
        feedback.last_version[clients] = rnd
        feedback.duration_s[clients] = duration_s
