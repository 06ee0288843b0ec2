"""A study whose sweep did not finish says it is partial (issue 45 item 9): on stderr and atop report.md and
claims.md, with every declared variant in the table (``missing`` where none of its runs is a result), seeds
counted against the declared ones, and each claim marked with what its variants lack.  A failed run is no
result, like a missing one."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from asyncfl.cli.study import report_dir
from asyncfl.output.reading import read_csv
from asyncfl.study.completeness import study_completeness
from asyncfl.study.report import write_report
from asyncfl.study.seed_statistics import RunRecord
from asyncfl.study.spec import declared_runs

CLAIM = {"family": "deadlines", "variant": "deadline", "versus": "no_deadline", "measure": "final_accuracy",
         "direction": "higher"}  # fmt: skip


def run_dir(path: Path, accuracies: list[float], summary: dict) -> Path:
    """A run evaluated at virtual 10, 20, ... s with ``summary`` as its summary.json."""
    path.mkdir(parents=True)
    rows = ["time,round,test_accuracy"] + [f"{10 * i},{i},{a}" for i, a in enumerate(accuracies, start=1)]
    (path / "metrics.csv").write_text("\n".join(rows) + "\n")
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def finished(path: Path, accuracies: list[float]) -> Path:
    summary = {"status": "finished", "final_accuracy": accuracies[-1], "best_accuracy": max(accuracies),
               "virtual_time_s": 10.0 * len(accuracies)}  # fmt: skip
    return run_dir(path, accuracies, summary)


def killed_sweep(tmp_path: Path) -> Path:
    """3 variants x 2 seeds declared; fedbuff ran both seeds, no_deadline's seed 1 failed (after reaching
    0.6 at 20 s), deadline never started."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    study = {"name": "tiny", "seeds": [0, 1], "baseline": "no_deadline", "targets": [0.6], "claims": [CLAIM],
             "compare": [{"name": "no_deadline"}, {"name": "deadline", "set": {"server.deadline_s": 12}},
                         {"name": "fedbuff"}]}  # fmt: skip
    (sweep / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    finished(sweep / "no_deadline" / "seed0", [0.3, 0.5, 0.7])
    run_dir(sweep / "no_deadline" / "seed1", [0.4, 0.6], {"status": "failed", "reason": "CUDA out of memory"})
    finished(sweep / "fedbuff" / "seed0", [0.2, 0.4, 0.5])
    finished(sweep / "fedbuff" / "seed1", [0.2, 0.3, 0.4])
    return sweep


def test_report_of_a_killed_sweep_says_it_is_partial(tmp_path, capsys):
    sweep = killed_sweep(tmp_path)
    assert report_dir(sweep, None) == 0  # the runs present still make a useful report
    notice = (
        "Partial study: 3 of the 6 declared runs (3 variant(s) x 2 seed(s)) are not results: no_deadline seed(s) 1"
        " (failed: CUDA out of memory); deadline seed(s) 0, 1 (no run directory). Every mean, interval, verdict"
        " and claim here is over the 3 run(s) present only"
    )
    err = capsys.readouterr().err
    assert f"warning: {sweep}: {notice}; finish the sweep with `python -m asyncfl run --resume {sweep}`." in err
    md = (sweep / "report.md").read_text()
    assert md.startswith(f"**{notice}.**\n\n")
    assert "| deadline | final accuracy (%) | 0/2 | missing | — | 0 | missing |" in md
    assert "| no_deadline | final accuracy (%) | 1/2 | 70.0 ± n/a | — |  | baseline |" in md
    # paired on seed 0 only: seed 1 of the baseline failed (after reaching 0.6), which is no result
    assert "| fedbuff | final accuracy (%) | 2/2 | 45.0 ± 63.5 | -20.0 ± n/a | 1 | too few seeds |" in md
    # fedbuff never reached 0.6 and ended at 30 s, the baseline's seed 0 reached it at 30 s: restricted at its
    # horizon fedbuff's mean is 30 s, and the columns subtract to the difference (issue 47)
    assert "| fedbuff | time to 0.6 (virtual s) | 2/2, reached 0 | 30.0 ± 0.0 | +0.0 ± n/a | 1 | only the baseline " \
        "reached it |" in md  # fmt: skip
    rows = {(r["variant"], r["measure"]): r for r in read_csv(sweep / "report.csv")}
    assert rows[("deadline", "best accuracy")]["seeds"] == "2" and rows[("deadline", "best accuracy")]["n"] == "0"
    assert rows[("deadline", "best accuracy")]["vs_baseline"] == "missing"
    claims_md = (sweep / "claims.md").read_text()
    assert claims_md.startswith(f"**{notice}.**\n\n")
    assert "| inconclusive (partial study: variant deadline: 0 of 2 seeds; versus no_deadline: 1 of 2 seeds) |" in md
    (claim,) = read_csv(sweep / "claims.csv")
    assert claim["partial"] == "variant deadline: 0 of 2 seeds; versus no_deadline: 1 of 2 seeds"
    assert claim["verdict"] == "inconclusive" and claim["pairs"] == "0"


def test_a_missing_baseline_gives_a_report_without_verdicts(tmp_path, capsys):
    sweep = killed_sweep(tmp_path)
    study = yaml.safe_load((sweep / "study.yaml").read_text())
    (sweep / "study.yaml").write_text(yaml.safe_dump({**study, "baseline": "deadline", "claims": None}))
    assert report_dir(sweep, None) == 0
    assert "baseline 'deadline' has no finished run, so the report pairs nothing" in capsys.readouterr().err
    assert "No baseline, so no paired verdicts" in (sweep / "report.md").read_text()


def test_a_complete_study_reads_as_before(tmp_path):
    """Every declared run a result: report.md and report.csv are byte for byte those written without the check."""
    sweep = killed_sweep(tmp_path)
    finished(sweep / "deadline" / "seed0", [0.4, 0.8])
    finished(sweep / "deadline" / "seed1", [0.4, 0.7])
    (sweep / "no_deadline" / "seed1" / "summary.json").write_text(json.dumps({"status": "finished",
                                                                               "final_accuracy": 0.6}))  # fmt: skip
    raw = yaml.safe_load((sweep / "study.yaml").read_text())
    completeness = study_completeness(sweep, *declared_runs(raw))
    assert not completeness.partial
    records = [RunRecord(v, s, sweep / v / f"seed{s}") for v in ("no_deadline", "deadline", "fedbuff") for s in (0, 1)]
    write_report(sweep, records, "no_deadline", [0.6], completeness=completeness)
    checked = {name: (sweep / name).read_bytes() for name in ("report.md", "report.csv")}
    write_report(sweep, records, "no_deadline", [0.6])
    assert checked == {name: (sweep / name).read_bytes() for name in ("report.md", "report.csv")}
    assert b"Partial" not in checked["report.md"]


def test_declared_runs_expand_the_sensitivity_axis():
    values = {"d1": {"server.deadline_s": 1}, "d2": {"server.deadline_s": 2}}
    raw = {"seeds": [3, 4], "compare": [{"name": "a"}, {"name": "b"}],
           "sensitivity": {"axis": "deadline", "variants": ["b"], "values": values}}  # fmt: skip
    assert declared_runs(raw) == (("a", "b.d1", "b.d2"), (3, 4))
    assert declared_runs({"seed": 7}) == (("base",), (7,))
