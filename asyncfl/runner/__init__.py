"""The run spine: one scenario played from start to end.

``start.py`` starts a run (or resumes one), ``simulation.py`` is the loop that plays the clock world and
turns each closed round into one :class:`~asyncfl.runner.record.AggregationRecord` (``record.py``), handed
to the callbacks (``callbacks/``, one a file).  ``learning.py`` is the learning side (the global model, the
strategy, the lazy training jobs, evaluation); ``timing_learning.py`` and ``replay.py`` stand in for it in
timing-only runs and while a resumed run replays up to its checkpoint.  ``selection_feedback.py`` reports
to ``server.selection``; ``checkpoint.py`` saves and loads what ``--resume`` needs; ``loop_guards.py``
guards the loop against the process (Ctrl-C, the garbage collector).
"""
