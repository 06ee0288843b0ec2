"""What ``validate`` and a run's start check beyond the schema, on this machine: the files a run reads
(trace files, the data set's files).  Every problem is reported at once, and nothing is loaded to
find it."""

from __future__ import annotations

from collections.abc import Callable

from asyncfl.config.errors import ConfigError
from asyncfl.config.loading import check_trace_files
from asyncfl.config.schema import Scenario
from asyncfl.learn.datasets import REGISTRY as DATASETS


def check_runnable(scenario: Scenario) -> None:
    """Raise one :class:`ConfigError` listing every problem a run of ``scenario`` would meet here."""
    problems = []
    for check in CHECKS:
        try:
            problem = check(scenario)
        except ConfigError as exc:  # the trace readers raise their first problem
            problem = str(exc)
        if problem:
            problems.append(problem)
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"{len(problems)} problem(s):\n  " + "\n  ".join(problems))


def data_files_problem(scenario: Scenario) -> str | None:
    """The data set's own answer (missing files with downloads off); a timing-only run reads none."""
    check = DATASETS[scenario.data.dataset].check_files
    return None if scenario.timing_only or check is None else check(scenario.data)


CHECKS: tuple[Callable[[Scenario], str | None], ...] = (
    check_trace_files,
    data_files_problem,
)
