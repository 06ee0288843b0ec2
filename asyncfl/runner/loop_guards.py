"""What guards the run loop against the process it runs in: Ctrl-C held back while a round's state and
its rows are written (and, once the run has stopped, reported with the run directory), and Python's
garbage collector kept from walking the whole population at every collection."""

from __future__ import annotations

import gc
import signal
import threading
from contextlib import contextmanager
from pathlib import Path


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run, after summary.json and the figure were written: names the run directory
    so that the command line can say how to continue it."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


class RunOutOfMemory(MemoryError):
    """The run ran out of memory in ``stage`` (simulation, output or figures); every file it had
    written is whole and summary.json names the stage (``failed_stage``)."""

    def __init__(self, run_dir: Path, stage: str) -> None:
        super().__init__(
            f"out of memory in the {stage} stage of the run in {run_dir}: the files written before it are whole and "
            f"summary.json says failed_stage: {stage}. Run it with fewer clients (data.clients), "
            + (
                "or with output.plot: false (the figures can be drawn later with `python -m asyncfl plot RUN_DIR`), "
                if stage == "figures"
                else ""
            )
            + "or on a machine with more memory."
        )
        self.run_dir, self.stage = run_dir, stage


@contextmanager
def interrupts_deferred():
    """Hold back Ctrl-C (SIGINT) for the duration of the block and raise it afterwards, so that an
    interrupt never lands between a round's state change and the rows that record it. Only the main
    thread with Python's default handler is affected; elsewhere (workers, custom handlers) this is a no-op."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise KeyboardInterrupt


class LoopGuards:
    """Python's cyclic garbage collector, left as it is, took about 40 % of a timing-only run of
    10^5 clients: every full collection walks every live object (plans, clients, streams), and a
    large run keeps millions alive.  Inside ``with LoopGuards() as guards:`` (the simulation), at each
    aggregation (:meth:`round_closed`) one full collection looks at what the round made (garbage cycles are
    freed, never frozen) and then everything alive is frozen (``gc.freeze``: later collections skip it;
    reference counting still frees it), and young collections run less often, so no collection walks the
    whole population again.  Afterwards everything is unfrozen and the thresholds restored.  Results never
    depend on it."""

    def __enter__(self) -> LoopGuards:
        self.thresholds = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(self.thresholds[0], 10_000), *self.thresholds[1:])
        return self

    def __exit__(self, *exc) -> None:
        gc.set_threshold(*self.thresholds)
        gc.unfreeze()

    @staticmethod
    def round_closed() -> None:
        gc.collect()  # only what this round made: everything older is frozen
        gc.freeze()
