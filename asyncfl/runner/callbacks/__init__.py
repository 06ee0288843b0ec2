"""What a run does around each aggregation, as small callbacks that the run loop calls in order,
one file each.

The run loop (:class:`asyncfl.runner.Simulation`) only plays the clock world, has the learner
aggregate what each round received, and hands the same :class:`~asyncfl.runner.callbacks.base.Aggregation`
to every callback:

====================  ======================================================================
``RoundLog``          events.jsonl's ``aggregate`` line, rounds.csv, updates.csv, weights.csv
``MetricsRecorder``   metrics.csv: evaluates the global model when due (``eval.every_rounds``,
                      the last aggregation, divergence); best / last accuracy, time to target
``StopRules``         ``stop.rounds``, ``stop.virtual_time_s``, ``stop.target_accuracy``, divergence
``Checkpointer``      ``checkpoint.every_rounds`` / ``every_virtual_s``, and when the run stops
``ProgressBar``       the tqdm bar
====================  ======================================================================

and then, in ``on_end``, the end-of-run files (:func:`asyncfl.runner.callbacks.end_of_run.end_of_run`, in
this order):

====================  ======================================================================
``SettleFormat``      the tables' format: ``output.format`` for a run that ended, else CSV
``ClientsTable``      clients.csv (or .parquet)
``StrategyTables``    the strategy's own tables (``extra_outputs``)
``CloseLogs``         ends the timeline clients' running tasks, closes the logs (with parquet:
                      metrics, rounds, updates, weights written as .parquet files too)
``OfflinePeriods``    offline_periods.csv
``SummaryJson``       summary.json
``RunFigures``        the run's figures (``output.plot``), their seconds in summary.json
``CheckpointCleanup`` drops the checkpoint of a run that ended
``DropConvertedLogs`` then the CSV logs written again as Parquet (``output.format: parquet``)
====================  ======================================================================

Hooks (:class:`~asyncfl.runner.callbacks.base.Callback`): ``on_start`` (a fresh run, before the clock
starts), ``on_aggregation``, ``on_resume`` (a resumed run, once the checkpoint's learning state is
back: until then every callback is muted, see ``Simulation``) and ``on_end``.  Nothing here imports
torch: evaluating, saving a checkpoint and the learner's state come in as plain callables, so every
callback is tested with fakes (tests/runner/test_callbacks.py).
"""
