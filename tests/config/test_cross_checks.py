"""The checks across sections (asyncfl/config/cross_checks.py): each is registered with the keys it reads,
they run in a fixed order, the first failure is the one message, and user code can add one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import scenario

from asyncfl.config import ConfigError, validate_scenario
from asyncfl.config.cross_checks import CROSS_CHECKS, cross_check
from asyncfl.config.problems import strip_wrappers, union_members
from asyncfl.config.schema import Scenario

BUILT_IN_ORDER = [
    "algorithm_runs_under_the_mode",
    "no_key_of_another_mode",
    "server_mode_rules",
    "availability_fits_the_mode",
    "selection_serves_the_mode",
    "algorithm_rules",
    "local_work_fits",
    "no_section_of_another_entry",
    "model_takes_the_data",
    "data_can_be_loaded",
    "flower_fits_the_mode",
]


def _resolves(path: str) -> bool:
    """Whether a dotted key names a field of the scenario (into sections; a tagged union's members share
    the key when any of them has it)."""
    models = [Scenario]
    for part in path.split("."):
        fields = [m.model_fields[part] for m in models if part in m.model_fields]
        if not fields:
            return False
        models = []
        for field in fields:
            tp = strip_wrappers(field.annotation)
            members = union_members(tp)
            models += members if members else [tp] if isinstance(tp, type) and hasattr(tp, "model_fields") else []
    return True


def test_the_built_in_cross_checks_run_in_a_fixed_order_and_read_real_keys():
    assert list(CROSS_CHECKS)[: len(BUILT_IN_ORDER)] == BUILT_IN_ORDER
    for entry in CROSS_CHECKS.values():
        unknown = [r for r in entry.reads if not _resolves(r)]
        assert not unknown, f"{entry.name} reads keys the scenario does not have: {unknown}"
    # every one reads more than one section, or a whole section a single key cannot name (the server's
    # keys of every mode)
    for entry in CROSS_CHECKS.values():
        assert len({r.split(".")[0] for r in entry.reads}) > 1 or entry.reads == ("server",), entry.name


def test_the_first_failing_check_is_the_message():
    """fedasync with k = 50 > 10 clients breaks two checks; the earlier one (the algorithm's
    mode) is reported, alone, as one ConfigError sentence."""
    raw = {"server": {"mode": "k_async", "k": 50}, "algorithm": {"name": "fedasync"}, "data": {"clients": 10}}
    with pytest.raises(ConfigError) as raised:
        validate_scenario(raw)
    message = str(raised.value)
    assert "1 problem(s)" in message and "server.k (50) is larger than the population" in message
    assert "fedasync mixes one update at a time" not in message  # the later check (algorithm_rules) never ran


def test_a_mode_rule_raises_the_one_error_type_naming_the_keys():
    with pytest.raises(ConfigError, match=r"server.clients_per_round \(50\) is larger than the population"):
        scenario(server={"clients_per_round": 50}, data={"clients": 10})


def test_user_code_can_register_a_cross_check_which_runs_after_the_built_ins():
    @cross_check("eval.every_rounds", "stop.rounds")
    def evaluates_at_least_once(s) -> None:
        if s.stop.rounds is not None and s.eval.every_rounds > s.stop.rounds:
            raise ConfigError(
                f"eval.every_rounds ({s.eval.every_rounds}) exceeds stop.rounds ({s.stop.rounds}); allowed: 1 to "
                f"{s.stop.rounds}"
            )

    try:
        assert list(CROSS_CHECKS)[-1] == "evaluates_at_least_once"
        scenario(eval={"every_rounds": 5}, stop={"rounds": 5})
        with pytest.raises(ConfigError, match=r"eval.every_rounds \(6\) exceeds stop.rounds \(5\); allowed: 1 to 5"):
            scenario(eval={"every_rounds": 6}, stop={"rounds": 5})
        with pytest.raises(ConfigError, match="needs server.mode sync"):  # a built-in still comes first
            scenario(
                eval={"every_rounds": 6}, stop={"rounds": 5}, server={"mode": "k_async"}, algorithm={"name": "fedavg"}
            )
    finally:
        CROSS_CHECKS.unregister("evaluates_at_least_once")


def test_no_scenario_check_returns_its_problem():
    """One style: a check raises ConfigError.  What may still return a sentence: the study's name rule
    (asyncfl/study collects its problems itself) and the trace converter's reason to skip an entry."""
    package = Path(__file__).resolve().parents[2] / "asyncfl"
    returning = sorted(
        f"{path.relative_to(package)}: {match}"
        for path in package.rglob("*.py")
        if path.parts[-2] not in ("study", "traces")
        for match in re.findall(r"def (\w+_problems?)\(", path.read_text(encoding="utf-8"))
    )
    assert returning == ["config/schema.py: directory_name_problem"], returning
