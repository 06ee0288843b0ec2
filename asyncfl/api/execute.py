"""Running from Python: :func:`run` (one scenario) and :func:`run_study` (variants x seeds), with the
same checks, directories and files as the command line, returning :class:`~asyncfl.results.Run`
and :class:`~asyncfl.results.Study` objects instead of printing."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from asyncfl.config import Scenario, apply_override, read_scenario
from asyncfl.config.runnable import check_runnable
from asyncfl.config.yaml_files import override_list, path_argument
from asyncfl.errors import ConfigError
from asyncfl.output.run_directory import refuse_used_out
from asyncfl.results import Run, Study, read_run
from asyncfl.runner.callbacks.base import Callback
from asyncfl.runner.start import run_scenario
from asyncfl.study.spec import build_study
from asyncfl.sweep.study_sweep import run_sweep


def _scenario(scenario: Scenario | Mapping[str, Any] | str | Path, overrides: list[str]) -> Scenario:
    if isinstance(scenario, Scenario):
        return Scenario.from_dict(scenario.model_dump(mode="json"), overrides) if overrides else scenario
    if isinstance(scenario, Mapping):
        return Scenario.from_dict(scenario, overrides)
    return Scenario.from_yaml(scenario, overrides)


def _raw(spec: Mapping[str, Any] | str | Path, overrides: Iterable[str]) -> tuple[dict[str, Any], str]:
    if isinstance(spec, Mapping):
        raw, source = copy.deepcopy(dict(spec)), "<dict>"
    else:
        raw, source = read_scenario(spec), str(spec)
    for item in overrides:
        apply_override(raw, item)
    return raw, source


def run(
    scenario: Scenario | Mapping[str, Any] | str | Path,
    *,
    out: str | Path | None = None,
    callbacks: Sequence[Callback] = (),
    overrides: Iterable[str] = (),
    quiet: bool = True,
) -> Run:
    """Run a scenario (a :class:`Scenario`, its YAML file or its keys as a dict) and return the
    :class:`Run` it wrote: into ``out`` (a new or empty directory) or ``output.dir/<name>/<timestamp>/``.

    ``overrides``: ``--set`` items, e.g. ``["server.k=5"]`` (a list: one ``'key=value'`` str alone is refused,
    as is one callback).  ``callbacks``: a list of objects with the hooks
    of :class:`asyncfl.Callback` (``on_start``, ``on_aggregation``, ``on_resume``,
    ``on_end``), called after the built-in ones at every aggregation.  Bad input raises
    :class:`asyncfl.ConfigError` (a callback that is none: TypeError) before anything is written."""
    out = path_argument(out, "out")
    chosen = _scenario(scenario, override_list(overrides))
    if isinstance(callbacks, Callback) or not isinstance(callbacks, Iterable):
        raise TypeError(
            f"callbacks: expected a list of asyncfl.Callback objects, got {type(callbacks).__name__}; "
            "wrap one callback in a list: callbacks=[callback]"
        )
    for callback in callbacks:
        if not isinstance(callback, Callback):
            raise TypeError(f"callbacks: {callback!r} is not an asyncfl.Callback")
    check_runnable(chosen)
    if out is not None:
        refuse_used_out(out, "refusing to overwrite a run.")
    return read_run(run_scenario(chosen, out, quiet=quiet, callbacks=tuple(callbacks)))


def run_study(
    study: Mapping[str, Any] | str | Path,
    *,
    seeds: Sequence[int] | None = None,
    executor: str = "local",
    out: str | Path | None = None,
    overrides: Iterable[str] = (),
    quiet: bool = True,
) -> Study:
    """Run every variant x seed of a study (its YAML file, or its keys as a dict with ``compare:``)
    and return the :class:`Study` of its sweep directory, with the comparison and report written.

    ``seeds`` replaces the study's ``seeds:``; ``executor`` is ``local`` or ``ray``; ``out`` a new
    or empty sweep directory (default ``output.dir/<name>/<timestamp>/``).  A run that raised is
    listed in ``Study.failures`` (the others still ran)."""
    out = path_argument(out, "out")
    raw, source = _raw(study, override_list(overrides))
    if seeds is not None:
        if isinstance(seeds, (str, bytes, Mapping)) or not isinstance(seeds, Iterable):
            raise ConfigError(f"seeds must be a list of ints such as [0, 1, 2], got {type(seeds).__name__} {seeds!r}.")
        raw["seeds"] = list(seeds)  # each checked by build_study as the study's seeds:
    spec = build_study(raw, source)
    for planned in spec.runs:  # every run checked before the first one starts
        check_runnable(planned.scenario)
    result = run_sweep(spec, out=out, executor=executor, quiet=quiet)
    failures = tuple((job.variant, job.seed, message) for job, message in result.failures)
    return Study(result.sweep_dir, failures)
