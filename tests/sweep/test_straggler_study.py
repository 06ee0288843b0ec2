"""scenarios/straggler_mitigation.yaml holds what its header promises, and its script's base file is what
``advise`` was run on (benchmarks/experiments/straggler_mitigation.py)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import yaml

from asyncfl.config import load_scenario
from asyncfl.study.spec import STUDY_KEYS, load_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "scenarios" / "straggler_mitigation.yaml"
CENTRAL_MLP = 0.669  # docs/figures/papers_central.md: mlp, 66.9 % over 5 seeds
Z90 = 1.2815515655446004  # standard normal 90th percentile


def _script():
    path = ROOT / "benchmarks" / "experiments" / "straggler_mitigation.py"
    spec = importlib.util.spec_from_file_location("straggler_mitigation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_study_is_fair_and_sized_as_its_header_says():
    study = load_study(STUDY)
    assert len(study.seeds) >= 10 and study.baseline == "fedavg_deadline"
    assert study.targets == (round(0.7 * CENTRAL_MLP, 3), round(0.8 * CENTRAL_MLP, 3))  # 0.468, 0.535
    assert not set(study.seeds) & set(range(10))  # the exploratory seeds 0-9 are not the evaluation seeds
    assert not set(study.seeds) & set(range(20))  # nor 10-19, run with the old step sizes and claims (issue 32)
    # issue 32: every variant's lr tuned the same way on 4 seeds; Oort and TiFL also claimed against `online`
    assert set(study.tuning.variants) == set(study.variants) and len(study.tuning.spec.seeds) >= 4
    online = {(c.variant, c.measure) for c in study.claims if c.versus == "online"}
    assert online == {(v, m) for v in ("oort", "tifl") for m in ("time_to:0.535", "final_accuracy")}
    runs = {r.variant: r.scenario for r in study.runs if r.seed == study.seeds[0]}
    assert {s.stop.virtual_time_s for s in runs.values()} == {3600}  # one virtual budget for all
    assert all(s.stop.rounds > 3600 for s in runs.values())  # never the limit: a round takes > 1 virtual s
    base = runs["fedavg_deadline"]
    assert base.server.deadline_s == 30 and runs["fedavg_wait"].server.deadline_s is None
    # K-async keeps as many clients busy as a sync round selects
    assert runs["fedbuff"].server.concurrency == base.server.clients_per_round == 10
    speed = base.population.compute.samples_per_s
    # log-normal: the 10th percentile is median / e^(z_0.9 sigma) = median / 6.0, within the asked 5-10x
    assert 5 < math.exp(Z90 * speed.sigma) < 10
    # the flash_network preset: uplink median = the geometric mean of FLASH's 431 and 6,635 kb/s = 1.6911 Mbit/s
    assert base.population.network.uplink_mbps.median == round(math.sqrt(431 * 6635) / 1000, 4) == 1.6911


def test_write_base_gives_the_scenario_advise_ran_on(tmp_path):
    _script().write_base(tmp_path / "base.yaml")
    raw = yaml.safe_load((tmp_path / "base.yaml").read_text())
    assert not set(STUDY_KEYS) & set(raw) and raw["seed"] == 0
    base = load_scenario(tmp_path / "base.yaml")
    study = load_study(STUDY)
    first = next(r.scenario for r in study.runs if (r.variant, r.seed) == ("fedavg_deadline", study.seeds[0]))
    assert base == first.model_copy(update={"seed": 0})


def test_the_published_page_holds_the_claims_and_links_every_pair(tmp_path):
    """write_docs on a finished sweep's files: the page has the claims table, and the per-seed pairs behind
    it are copied beside the page and linked (issue 32: every published claim row has its per-seed values), and
    so are the tuning choices the verdicts rest on; its wall time is the study's over every command that ran it."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "accuracy_vs_time.png").write_bytes(b"png")
    (sweep / "cost.md").write_text("| variant | cost |\n|---|---|\n| a | 1 |\n")
    (sweep / "report.md").write_text("Mean ± 95% CI over seeds.\n\n| table |\n")
    (sweep / "report.csv").write_text(
        "variant,measure,n,seeds,mean,ci_half_width,baseline,diff_mean,diff_ci_half_width,paired_seeds,vs_baseline\n"
        "uniform,final accuracy,2,2,0.5,0.01,uniform,,,,\n"
        "oort,final accuracy,2,2,0.6,0.01,uniform,0.1,0.02,2,higher\n"
    )
    (sweep / "claims.md").write_text("| claim | verdict |\n|---|---|\n| oort > online | supported |\n")
    (sweep / "claims_seeds.md").write_text("| claim | seed |\n|---|---|\n| oort vs online | 0 |\n")
    (sweep / "claims_seeds.csv").write_text("variant,versus,seed,difference\noort,online,0,1.0\n")

    class Load:
        def note(self) -> str:
            return "\nMachine: quiet.\n"

    script = _script()
    script.write_docs(sweep, tmp_path / "docs", 60.0, 2, "uniform", [0.4], Load(), "ray")
    page = (tmp_path / "docs" / "results" / "straggler_mitigation.md").read_text()
    assert "| oort > online | supported |" in page
    assert "[straggler_mitigation_claims_seeds.md](../results/straggler_mitigation_claims_seeds.md)" in page
    copied = tmp_path / "docs" / "results" / "straggler_mitigation_claims_seeds.csv"
    assert copied.read_text() == (sweep / "claims_seeds.csv").read_text()
    assert "| oort | final accuracy (%) | 2/2 | 60.0 ± 1.0 | +10.0 ± 2.0 | 2 | higher |" in page
    assert "**1.0 min** (60 s) with the ray executor" in page  # a study run in one go: its whole wall time
    assert "## Tuning" not in page  # nothing tuned: no section
    (sweep / "tuned.yaml").write_text(yaml.safe_dump({
        "criterion": "final_accuracy", "target": None, "seeds": [100, 101], "grid": {"training.lr": [0.1, 0.3]},
        "chosen": {"oort": {"training.lr": 0.3}}, "untuned": ["uniform"], "rule": "mean_minus_se"}))  # fmt: skip
    (sweep / "tuning.csv").write_text("variant,point,training.lr,seed100,seed101\noort,lr0.3,0.3,0.6,0.5\n")
    script.write_docs(sweep, tmp_path / "docs", 130.0, 2, "uniform", [0.4], Load(), "ray", commands=2)
    page = (tmp_path / "docs" / "results" / "straggler_mitigation.md").read_text()
    assert "(130 s over 2 commands: a resumed sweep)" in page  # their sum, said to be one
    assert "(the machine's load before it started is at the end of this page)" in page  # no first load given
    first = {"load_1min": "0.35", "cores": "2", "forced": "false"}
    script.write_docs(sweep, tmp_path / "docs", 130.0, 2, "uniform", [0.4], Load(), "ray", commands=2,
                      first_load=first)  # fmt: skip
    page = (tmp_path / "docs" / "results" / "straggler_mitigation.md").read_text()
    assert (  # the study's load is its first command's, not that of the command that last wrote the page
        "(the machine's 1-minute load average before its first command: 0.35 on 2 cores (0.17 per core); before "
        "the last of the 2, which wrote this page, at the end of this page)." in page
    )
    assert "| oort | training.lr = 0.3 |" in page and "`docs/results/straggler_mitigation_tuning.csv`" in page
    assert "csv`).\n\n## Tuning\n" in page  # one blank line between the pairs' link and the next section
    tuning_copy = tmp_path / "docs" / "results" / "straggler_mitigation_tuning.csv"
    assert tuning_copy.read_text() == (sweep / "tuning.csv").read_text()
    script.write_docs(sweep, tmp_path / "docs", 6.0, 2, "uniform", [0.4], Load(), "ray", commands=None)
    page = (tmp_path / "docs" / "results" / "straggler_mitigation.md").read_text()
    assert "(6 s; this command of a resumed sweep only)" in page  # not passed off as the study's wall time
    overrides = ["tune.divergence_margin=1", "seeds=[30, 31]"]
    script.write_docs(sweep, tmp_path / "docs", 6.0, 2, "uniform", [0.4], Load(), "ray", page="other",
                      overrides=overrides)  # fmt: skip
    other = (tmp_path / "docs" / "results" / "other.md").read_text()  # a follow-up: its own page, figure, pairs
    assert other.startswith("# Straggler mitigation (2 seeds, tune.divergence_margin=1, seeds=[30, 31])")
    assert "straggler_mitigation.py --page other --set tune.divergence_margin=1 --set 'seeds=[30, 31]'`" in other
    assert "![accuracy against virtual time](../figures/other.png)" in other and "[other_claims_seeds.md]" in other
    assert (tmp_path / "docs" / "figures" / "other.png").is_file()
    assert (tmp_path / "docs" / "results" / "straggler_mitigation.md").read_text() == page  # left alone
