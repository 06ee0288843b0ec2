"""Studies: compare named variants over seeds (``compare:`` / ``seeds:`` in a scenario file), read from
the run directories their sweep wrote (running them is :mod:`asyncfl.sweep`'s part).

Modules: :mod:`~asyncfl.study.spec` (expanding a study, with its ``tune:`` block:
:mod:`~asyncfl.study.tuning`), :mod:`~asyncfl.study.compare`, :mod:`~asyncfl.study.seed_statistics`,
:mod:`~asyncfl.study.report` and :mod:`~asyncfl.study.cost` (tables over seeds; their figures are drawn
by :mod:`asyncfl.figures`), :mod:`~asyncfl.study.claims` and :mod:`~asyncfl.study.claim_tests` (declared
claims and their verdicts, with a :mod:`~asyncfl.study.sensitivity` axis),
:mod:`~asyncfl.study.weight_shares` (does a weighting rule starve a group of clients?),
:mod:`~asyncfl.study.tuning_results` (the tuned setting chosen from the tuning runs, and
:mod:`~asyncfl.study.tuned_sets` the runs of a variant tuned on several measures) and
:mod:`~asyncfl.study.advice_files` (``advise``'s tables).  Only the light study definition is
imported here, so ``validate`` stays fast.
"""

from asyncfl.study.spec import RunSpec, Study, build_study, is_study, load_study

__all__ = ["RunSpec", "Study", "build_study", "is_study", "load_study"]
