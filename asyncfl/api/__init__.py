"""The Python API: run a scenario or a study from code and read what it wrote as pandas DataFrames.

    import asyncfl

    run = asyncfl.run(asyncfl.Scenario.from_yaml("scenarios/k_async.yaml"), out="runs/mine")
    run.metrics          # metrics.csv as a DataFrame; .rounds, .clients, .updates, .summary, .path, .plot()
    study = asyncfl.run_study("scenarios/compare_deadlines.yaml", seeds=[0, 1])
    study.report         # report.csv; .runs, .comparison, .time_to_target, .run(variant, seed)

:mod:`asyncfl.results` reads run and sweep directories (pandas only; it sits below the sweeps and the
Flower bridge, which return its objects); :mod:`asyncfl.api.execute` runs them (the runner and the study
machinery, so torch).
"""

from asyncfl.api.execute import run, run_study
from asyncfl.results import Run, Study, read_run, read_study

__all__ = ["Run", "Study", "read_run", "read_study", "run", "run_study"]
