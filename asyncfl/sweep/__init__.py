"""Running many scenarios: a study's variants x seeds (its tuning runs first), resumably, one after the
other in this process or as Ray tasks, and ``advise``'s grid of timing-only runs.

Modules: :mod:`~asyncfl.sweep.study_sweep` (a study's sweep directory: plan, resume, run, then the
comparison and report of :mod:`asyncfl.study`), :mod:`~asyncfl.sweep.jobs` (one run and the local
executor), :mod:`~asyncfl.sweep.ray_executor` (the Ray executor) and :mod:`~asyncfl.sweep.advise`.
This package sits above the run loop and above :mod:`asyncfl.study`, which only reads the run
directories written here; nothing is imported here, so a Ray worker loads only what its task needs.
"""
