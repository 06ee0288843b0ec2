"""Schema behaviour: defaults, overrides, cross-field checks, trace files, the generated reference."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import scenario

from asyncfl.config import ConfigError, apply_override, validate_scenario
from asyncfl.config.reference import reference_markdown
from asyncfl.sim.availability.trace import read_availability_trace
from asyncfl.sim.profiles import read_device_trace


def test_defaults_pick_the_algorithm_from_the_mode():
    assert scenario().algorithm.name == "fedavg"
    assert scenario(server={"mode": "k_async"}).algorithm.name == "fedbuff"


def test_a_number_is_a_constant_distribution():
    s = scenario(population={"compute": {"samples_per_s": 7}})
    assert s.population.compute.samples_per_s.dist == "constant"
    assert s.population.compute.samples_per_s.value == 7


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"server": {"mode": "k_async"}, "algorithm": {"name": "fedavg"}}, "needs server.mode sync"),
        ({"server": {"mode": "sync"}, "algorithm": {"name": "fedbuff"}}, "needs server.mode k_async"),
        ({"server": {"clients_per_round": 50}}, "server.clients_per_round"),
        (
            {"server": {"mode": "k_async"}, "population": {"availability": {"kind": "bernoulli", "p": 0.5}}},
            "slot_s is required",
        ),
        ({"population": {"availability": {"kind": "markov", "p": 1.5, "mean_cycle_s": 5}}}, "(0, 1]"),
        ({"population": {"compute": {"samples_per_s": {"dist": "uniform", "low": 5, "high": 1}}}}, "must not exceed"),
        ({"stop": {"rounds": None}}, "stop.rounds or stop.virtual_time_s"),
        ({"population": {"availability": {"kind": "sometimes"}}}, "population.availability.kind"),
    ],
)
def test_cross_field_errors(raw, needle):
    with pytest.raises(ConfigError) as err:
        validate_scenario(raw, "x.yaml")
    assert needle in str(err.value)


def test_override_parses_yaml_values_and_creates_sections():
    raw = {"server": {"mode": "sync"}}
    apply_override(raw, "server.deadline_s=2.5")
    apply_override(raw, "population.availability={kind: markov, p: 0.4, mean_cycle_s: 60}")
    s = validate_scenario(raw)
    assert s.server.deadline_s == 2.5 and s.population.availability.p.value == 0.4
    with pytest.raises(ConfigError, match="is a value, not a section"):
        apply_override(raw, "server.mode.x=1")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("client,start,end\n0,0,1\n", "expected the header client,start_s,end_s"),
        ("client,start_s,end_s\n0,5,1\n1,0,1\n", "line 2: need 0 <= start_s < end_s"),
        ("client,start_s,end_s\n0,-1,1\n1,0,1\n", "line 2"),
        ("client,start_s,end_s\n0,0,10\n0,5,20\n1,0,1\n", "unsorted or overlap"),
        ("client,start_s,end_s\n0,0,10\n", "no interval for clients [1]"),
        ("client,start_s,end_s\n0,0,x\n1,0,1\n", "numbers"),
        ("client,start_s,end_s\n7,0,1\n", "outside 0..1"),
    ],
)
def test_availability_trace_errors(tmp_path, text, needle):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_availability_trace(path, 2)
    assert needle in str(err.value) and "population.availability.file" in str(err.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("client,speed\n0,1\n", "expected the header"),
        ("client,samples_per_s,uplink_mbps,downlink_mbps,latency_s\n0,-1,1,1,0\n1,1,1,1,0\n", "must be positive"),
        ("client,samples_per_s,uplink_mbps,downlink_mbps,latency_s\n0,1,1,1,0\n", "no row for clients [1]"),
        ("client,samples_per_s,uplink_mbps,downlink_mbps,latency_s\n0,1,1,1,0\n0,1,1,1,0\n", "repeated"),
    ],
)
def test_device_trace_errors(tmp_path, text, needle):
    path = tmp_path / "devices.csv"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_device_trace(path, 2, 0.0)
    assert needle in str(err.value) and "population.device_trace" in str(err.value)


def test_missing_trace_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_device_trace(tmp_path / "none.csv", 2, 0.0)


def test_reference_lists_every_stable_key():
    ref = reference_markdown()
    keys = [
        "name", "seed", "device", "data.dataset", "data.clients", "data.partition.kind", "model.name",
        "training.local_steps", "training.batch_size", "training.lr", "server.mode", "server.deadline_s",
        "server.k", "server.concurrency", "algorithm.name", "stop.rounds", "stop.virtual_time_s",
        "stop.target_accuracy", "eval.every_rounds",
    ]  # fmt: skip
    for key in keys:
        assert f"`{key}`" in ref, key


def _models_in(annotation) -> list:
    """The pydantic models an annotation admits, through Annotated, Optional, unions and lists."""
    import types
    import typing

    from pydantic import BaseModel

    origin = typing.get_origin(annotation)
    if origin in (typing.Annotated, list):
        return _models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []


def _accepted_keys(model, prefix: str, keys: set, dist_keys: dict) -> None:
    """Every dotted key the schema accepts, through every variant of every union (walked from the pydantic
    models, independently of the reference code); distributions' keys go by ``dist`` into ``dist_keys``."""
    for name, field in model.model_fields.items():
        path, members = prefix + name, _models_in(field.annotation)
        if not members or all("dist" in m.model_fields for m in members):
            keys.add(path)
        for member in members:
            if "dist" in member.model_fields:  # documented in the distribution table
                tag = member.model_fields["dist"].annotation.__args__[0]
                for key, sub in member.model_fields.items():
                    dist_keys.setdefault(tag, set()).update({key} | {k for m in _models_in(sub.annotation)
                                                                     for k in m.model_fields})  # fmt: skip
            else:
                _accepted_keys(member, path + ".", keys, dist_keys)


def test_reference_names_every_key_the_schema_accepts():
    from asyncfl.config.schema import Scenario

    keys, dist_keys = set(), {}
    _accepted_keys(Scenario, "", keys, dist_keys)
    assert {"algorithm.staleness.a", "algorithm.staleness.b", "algorithm.cutoff.t0", "algorithm.cutoff.c",
            "data.partition.base.alpha"} <= keys and "floor" in dist_keys["label_correlated"]  # fmt: skip
    ref = reference_markdown()
    assert [key for key in sorted(keys) if f"`{key}`" not in ref] == []
    rows = {line.split("|")[1].strip(): line for line in ref.splitlines() if line.startswith("| `")}
    for tag, names in dist_keys.items():
        assert f"`{tag}`" in rows, tag
        assert [k for k in sorted(names - {"dist"}) if f"`{k}`" not in rows[f"`{tag}`"]] == [], tag
    # a number is accepted only by distributions; the reference says so for no other union
    for line in rows.values():
        allowed = line.split(" | ")[1]
        assert "number" not in allowed or "distribution" in allowed, line
    with pytest.raises(ConfigError, match="algorithm"):
        validate_scenario({"server": {"mode": "k_async"}, "algorithm": {"name": "fedbuff", "staleness": 0.5}})


def test_docs_reference_is_current():
    """The docs' key table is generated from the schema: regenerate with
    `python -m asyncfl reference --update docs/reference/scenario-keys.md` after changing the schema."""
    from pathlib import Path

    from asyncfl.config.reference import END, START

    page = (Path(__file__).parents[2] / "docs" / "reference" / "scenario-keys.md").read_text(encoding="utf-8")
    block = page.split(START)[1].split(END)[0].strip()
    assert block == reference_markdown().strip()


def test_reference_update_keeps_the_file_when_the_reference_cannot_be_built(tmp_path, monkeypatch):
    """`reference --update` used to open the file for writing before building the table: an error
    while building it left the README empty."""
    from asyncfl.config import reference

    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{reference.START}\nold\n{reference.END}\noutro\n")

    def broken():
        raise RuntimeError("schema walk failed")

    monkeypatch.setattr(reference, "reference_markdown", broken)
    with pytest.raises(RuntimeError):
        reference.update_block(readme)
    assert readme.read_text() == f"intro\n{reference.START}\nold\n{reference.END}\noutro\n"


@pytest.mark.parametrize(
    "availability",
    [
        {"kind": "cluster_dropout", "alpha": 0.5},
        {"kind": "markov", "p": 0.5, "mean_cycle_rounds": 4},
        {"kind": "cyclic", "p": 0.5, "period_rounds": 10},
    ],
)
def test_round_based_availability_needs_sync_rounds(availability):
    with pytest.raises(ConfigError, match="counts sync rounds"):
        validate_scenario({"server": {"mode": "k_async"}, "population": {"availability": availability}})
    validate_scenario({"server": {"mode": "sync"}, "population": {"availability": availability}})


def test_trace_paths_are_relative_to_the_scenario_file(tmp_path):
    from asyncfl.config import load_scenario

    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "s.yaml").write_text(
        "population:\n  device_trace: devices.csv\n  availability: {kind: trace, file: sub/online.csv}\n"
    )
    s = load_scenario(folder / "s.yaml")
    assert s.population.device_trace == folder / "devices.csv"
    assert s.population.availability.file == folder / "sub" / "online.csv"


def test_a_studys_variant_and_sensitivity_trace_paths_are_relative_to_the_study_file(tmp_path):
    """A trace named in compare[i].set or sensitivity.values (dotted or nested) is read from the study's folder,
    as the base's is; an absolute path stays as written."""
    from asyncfl.config import read_scenario

    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "s.yaml").write_text(
        "seeds: [0]\npopulation: {device_trace: base.csv}\n"
        "compare:\n  - {name: a, set: {population.device_trace: a.csv}}\n"
        "  - {name: b, set: {population: {availability: {kind: trace, file: sub/b.csv}}}}\n"
        "  - {name: c, set: {population.device_trace: /abs/c.csv}}\n"
        "sensitivity: {axis: speeds, values: {x: {population.device_trace: x.csv}, y: {training.lr: 0.1}}}\n"
    )
    raw = read_scenario(folder / "s.yaml")
    assert raw["population"]["device_trace"] == str(folder / "base.csv")
    assert raw["compare"][0]["set"] == {"population.device_trace": str(folder / "a.csv")}
    assert raw["compare"][1]["set"]["population"]["availability"]["file"] == str(folder / "sub" / "b.csv")
    assert raw["compare"][2]["set"] == {"population.device_trace": "/abs/c.csv"}
    assert raw["sensitivity"]["values"] == {"x": {"population.device_trace": str(folder / "x.csv")},
                                            "y": {"training.lr": 0.1}}  # fmt: skip


def test_fedasync_needs_k_equal_one():
    with pytest.raises(ConfigError, match="set server.k to 1"):
        validate_scenario({"server": {"mode": "k_async", "k": 4}, "algorithm": {"name": "fedasync"}})


def test_staleness_study_fairness_finds_its_trace_from_any_directory(tmp_path, monkeypatch):
    """benchmarks/experiments/staleness_study.py --fairness read the scenario's device trace relative to the working
    directory instead of the scenario file."""
    import importlib.util

    from asyncfl.config import validate_scenario

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "staleness_study", root / "benchmarks" / "experiments" / "staleness_study.py"
    )
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    monkeypatch.chdir(tmp_path)
    for algorithm in study.ALGORITHMS:
        scenario = validate_scenario(study.fairness_raw(algorithm, 0))
        profiles = read_device_trace(scenario.population.device_trace, scenario.data.clients, 0.0)
        assert [p.samples_per_s for p in profiles[:5]] == [25.0] * 5  # the slow class-9 holders


def test_trainer_auto_is_described_as_the_rule_it_is():
    from asyncfl.learn.executors import CPU_BATCHED_MAX_PARAMS
    from asyncfl.learn.training import Trainer

    description = Trainer.model_fields["executor"].description
    assert "fixed rule" in description and f"{CPU_BATCHED_MAX_PARAMS / 1e6:g}M parameters" in description


@pytest.mark.parametrize(
    "server, key, mode",
    [
        ({"mode": "k_async", "k": 2, "deadline_s": 8}, "server.deadline_s", "sync"),
        ({"mode": "k_async", "k": 2, "late_updates": "next_round"}, "server.late_updates", "sync"),
        ({"mode": "k_async", "k": 2, "clients_per_round": 3}, "server.clients_per_round", "sync"),
        ({"mode": "sync", "k": 2}, "server.k", "k_async"),
        ({"concurrency": 3}, "server.concurrency", "k_async"),
        ({"max_staleness": 4}, "server.max_staleness", "k_async"),
    ],
)
def test_a_key_of_the_other_server_mode_is_refused(server, key, mode):
    with pytest.raises(ConfigError) as err:
        validate_scenario({"data": {"clients": 4}, "server": server})
    text = str(err.value)
    assert key in text and f"only with server.mode {mode}" in text, text


def test_other_mode_keys_at_their_defaults_are_accepted():
    """null (or the default) says 'not used': a study variant switching modes can clear a base key, and a
    run's config.yaml, which lists every key, validates again."""
    s = validate_scenario({"data": {"clients": 4}, "server": {"mode": "k_async", "k": 2, "clients_per_round": None}})
    assert validate_scenario(s.model_dump(mode="json")) == s
    sync = validate_scenario({"data": {"clients": 4}, "server": {"deadline_s": 3}})
    assert validate_scenario(sync.model_dump(mode="json")) == sync


def test_null_clears_every_key_of_the_other_mode():
    """k, concurrency and late_updates are not nullable types, yet null must clear them too: a study
    variant that switches a K-async base to sync merges key by key and can only clear with null (the
    FedHist studies failed to validate on exactly this)."""
    sync = validate_scenario(
        {"data": {"clients": 4}, "server": {"mode": "sync", "k": None, "concurrency": None, "max_staleness": None}}
    )
    assert sync.server.k == 10 and sync.server.concurrency == 20
    k_async = validate_scenario({"data": {"clients": 4}, "server": {"mode": "k_async", "k": 2, "late_updates": None}})
    assert k_async.server.late_updates == "drop"


SHIPPED = sorted((Path(__file__).resolve().parents[2] / "scenarios").rglob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_scenario_and_study_validates(path):
    """What `python -m asyncfl validate FILE` checks, for every file under scenarios/ (studies: every variant)."""
    from asyncfl.config import load_scenario, read_yaml
    from asyncfl.study.spec import is_study, load_study

    if is_study(read_yaml(path)):
        assert load_study(path).variants
    else:
        load_scenario(path)


def test_an_algorithm_of_the_other_mode_is_blamed_on_the_mode_not_on_its_keys():
    from asyncfl.config import load_scenario

    root = Path(__file__).resolve().parents[2]
    with pytest.raises(ConfigError) as err:
        load_scenario(root / "scenarios" / "k_async.yaml", ["algorithm.name=fedavg"])
    text = str(err.value)
    assert "algorithm.name 'fedavg' needs server.mode sync" in text and "staleness" not in text, text


@pytest.mark.parametrize("mode", [[], {"a": 1}, 3, "x"])
def test_a_server_mode_that_is_no_name_is_reported_on_its_path(mode):
    """(hypothesis found server: {mode: []} raising TypeError once modes became a registry)"""
    with pytest.raises(ConfigError, match=r"server\.mode: .*'sync' or 'k_async'"):
        validate_scenario({"server": {"mode": mode}, "algorithm": {"name": "fedbuff"}})


DUPLICATED = """\
name: twice
server:
  mode: sync
  deadline_s: 5
data: {clients: 10}
server:
  mode: k_async
  k: 3
  k: 4
compare:
  - {name: a, set: {seed: 1}, name: b}
"""


def test_a_key_written_twice_is_refused_with_both_lines(tmp_path):
    """PyYAML keeps the last of two equal keys silently: the first server section would be lost."""
    from asyncfl.config import read_yaml
    from asyncfl.study.spec import load_study

    path = tmp_path / "twice.yaml"
    path.write_text(DUPLICATED)
    for read in (read_yaml, load_study):  # scenario and study files are read alike
        with pytest.raises(ConfigError) as err:
            read(path)
        message = str(err.value)
        assert message.startswith(f"{path}: ")
        for needle in ("server is set at line 2 and again at line 6", "server.k is set at line 8 and again at line 9",
                       "compare[0].name is set at line 11 and again at line 11"):  # fmt: skip
            assert needle in message, message


def test_a_key_written_twice_in_a_set_value_is_refused():
    raw: dict = {}
    with pytest.raises(ConfigError, match=r"--set 'x=\{a: 1, a: 2\}': x\.a is set twice"):
        apply_override(raw, "x={a: 1, a: 2}")
    with pytest.raises(ConfigError, match=r"server\.k is set twice"):
        apply_override(raw, "server={k: 1, k: 2}")
    assert raw == {}
    apply_override(raw, "x={a: 1, b: 2}")  # different keys, and text that is no YAML mapping, still pass
    apply_override(raw, "name={a")
    assert raw == {"x": {"a": 1, "b": 2}, "name": "{a"}


def test_a_merge_key_may_be_overridden_and_aliases_repeat(tmp_path):
    """``<<: *base`` then the same key is YAML's way to override a merged value, not a duplicate."""
    from asyncfl.config import read_yaml

    path = tmp_path / "merge.yaml"
    path.write_text("base: &b {k: 1, mode: sync}\nserver: {<<: *b, k: 2}\nother: *b\n")
    assert read_yaml(path) == {"base": {"k": 1, "mode": "sync"}, "server": {"k": 2, "mode": "sync"},
                               "other": {"k": 1, "mode": "sync"}}  # fmt: skip
