"""Studies: compare named variants over seeds (``compare:`` / ``seeds:`` in a scenario file).

Modules: :mod:`~asyncfl.study.spec` (expanding a study), :mod:`~asyncfl.study.sweep` (running it,
resumable, with :mod:`~asyncfl.study.jobs` locally or :mod:`~asyncfl.study.ray_executor` on Ray),
:mod:`~asyncfl.study.compare`, :mod:`~asyncfl.study.seed_statistics`, :mod:`~asyncfl.study.report` and
:mod:`~asyncfl.study.cost` (tables over seeds; their figures are drawn by :mod:`asyncfl.figures`),
:mod:`~asyncfl.study.advise` (timing-only sweeps over a deadline or K), :mod:`~asyncfl.study.claims` and
:mod:`~asyncfl.study.claim_tests` (declared claims and their verdicts, with a
:mod:`~asyncfl.study.sensitivity` axis), :mod:`~asyncfl.study.weight_shares` (does a weighting rule
starve a group of clients?).  Only the light study
definition is imported here, so ``validate`` stays fast.
"""

from asyncfl.study.spec import RunSpec, Study, build_study, is_study, load_study

__all__ = ["RunSpec", "Study", "build_study", "is_study", "load_study"]
