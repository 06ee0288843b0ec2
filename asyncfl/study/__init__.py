"""Studies: compare named variants over seeds (``compare:`` / ``seeds:`` in a scenario file).

Modules: :mod:`~asyncfl.study.spec` (expanding a study), :mod:`~asyncfl.study.sweep` (running it,
resumable, with :mod:`~asyncfl.study.jobs` locally or :mod:`~asyncfl.study.ray_executor` on Ray),
:mod:`~asyncfl.study.compare` and :mod:`~asyncfl.study.aggregate` (tables over seeds),
:mod:`~asyncfl.study.figures` (comparison figures) and :mod:`~asyncfl.study.straggler` (per-run
straggler figures).  Only the light study definition is imported here, so ``validate`` stays fast.
"""

from asyncfl.study.spec import RunSpec, Study, build_study, is_study, load_study

__all__ = ["RunSpec", "Study", "build_study", "is_study", "load_study"]
