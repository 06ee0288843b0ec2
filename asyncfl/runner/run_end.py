"""The one place a run's end is decided, for every kind of run (a native :class:`~asyncfl.runner.simulation.
Simulation`, a K-async Flower run, which is one, and a Flower ServerApp's :class:`~asyncfl.flower.start.
FlowerSession`): whatever ends it, its end-of-run files are written for what has run and summary.json says how it
ended (:data:`~asyncfl.runner.summary.RunStatus`):

==================  ================================================================================
``finished``        the server ended, or ``stop.rounds`` / ``stop.virtual_time_s`` was reached
``target_reached``  ``stop.target_accuracy`` with ``at_target`` (set by the stop rules)
``diverged``        the model became NaN or infinite (set by the stop rules)
``interrupted``     Ctrl-C (KeyboardInterrupt); a native run resumes from its last checkpoint
``out_of_memory``   a MemoryError in the simulation; a native run resumes from its last checkpoint
``failed``          any other exception: ``reason`` is its type and message, on one line
==================  ================================================================================

The exception that ended the run is raised again unchanged once the files are written (a MemoryError as
:class:`~asyncfl.runner.loop_guards.RunOutOfMemory`, which names the stage).  An exception in an end-of-run
callback does not stop the others (no figure is drawn after one): summary.json names its stage
(``failed_stage``); a MemoryError there keeps the run's status (its results are whole) and any other exception
makes it ``failed``.  That exception is raised after the files are written, if the run itself ended well."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.loop_guards import RunOutOfMemory
from asyncfl.runner.summary import FailedSummary, write_summary


def one_line(error: BaseException) -> str:
    """``reason`` of a failed run: the exception's type and its message, its lines joined."""
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


@contextmanager
def run_end(state: RunState, run_dir: Path, finish: Callable[[], None]) -> Iterator[None]:
    """Play the run inside; then decide its status, ``finish()`` (:func:`end_callbacks`: its end-of-run files,
    summary.json last of them) and raise again what ended it, if anything did."""
    try:
        yield
    except KeyboardInterrupt:
        state.progress.status = "interrupted"
        finish()
        raise
    except MemoryError:
        state.progress.status, state.failed_stage = "out_of_memory", "simulation"
        state.error = "out of memory in the simulation stage"
        finish()
        raise RunOutOfMemory(run_dir, "simulation") from None
    except BaseException as error:  # a user's callback or app, a ConfigError raised mid-run by a Grid: anything
        state.progress.status, state.reason = "failed", one_line(error)
        finish()
        raise
    if state.progress.status == "running":
        state.progress.status = "finished"
    finish()


def end_callbacks(state: RunState, now: float, callbacks: Sequence[Callback], out) -> None:
    """Every callback's ``on_end`` in order, each whatever the ones before it raised (no figure is drawn after
    a failure: memory is short, or what they read may be missing), then summary.json again if what it says
    changed since it was written (a failed stage after it), or for the first time if it was never written.  The
    first end-of-run failure is raised afterwards unless the run was already failing."""
    failure: BaseException | None = None
    ending = state.progress.status
    for callback in callbacks:
        if state.failed_stage is not None and callback.stage == "figures":
            continue
        try:
            callback.on_end(state, now)
        except Exception as error:  # MemoryError included
            _note_failure(state, callback.stage, error)
            failure = failure or error
    written = state.summary
    if written is None:
        p = state.progress
        write_summary(out, FailedSummary(p.status, p.rounds, state.reason, state.failed_stage, state.error))
        return _raise_after(failure, ending, state, out.path)
    final = replace(
        written, status=state.progress.status, reason=state.reason, failed_stage=state.failed_stage, error=state.error
    )
    if final != written:
        state.summary = final
        write_summary(out, final)
    _raise_after(failure, ending, state, out.path)


def _note_failure(state: RunState, stage: str, error: Exception) -> None:
    """An end-of-run callback raised: its stage (the first one), and for anything but a MemoryError, the run has
    failed (unless it already had)."""
    state.failed_stage = state.failed_stage or stage
    if isinstance(error, MemoryError):
        state.error = state.error or f"out of memory in the {state.failed_stage} stage"
    elif state.progress.status != "failed":
        state.progress.status, state.reason = "failed", one_line(error)


def _raise_after(failure: BaseException | None, ending: str, state: RunState, run_dir: Path) -> None:
    """The end-of-run failure, raised once the files are written, unless the run ended on an exception of its
    own (``ending``: its status before its end-of-run callbacks ran), which :func:`run_end` raises."""
    if failure is None or ending in ("interrupted", "out_of_memory", "failed"):
        return
    if isinstance(failure, MemoryError):
        raise RunOutOfMemory(run_dir, state.failed_stage or "output") from None
    raise failure
