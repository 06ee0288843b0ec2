"""The comparison outputs of a sweep (or of runs made separately), written into one directory:

``comparison.csv``       per variant, axis (time | round) and abscissa: seeds, accuracy mean/std/min/max
``runs.csv``             one row per run (variant, seed, status, final/best accuracy, virtual time ...)
``time_to_target.csv``   per variant and target accuracy: seeds that reached it, time and rounds to it
                         (restricted means: a miss counts as its run's horizon)
``time_to_target.md``    the same as a Markdown table
``client_accuracy.csv``  FedAR Table 3 statistics per variant (averaged over seeds), and ``.md``
``accuracy_vs_time.png`` / ``accuracy_vs_round.png``  mean over seeds with a shaded band
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from asyncfl.errors import ConfigError
from asyncfl.figures.compare import plot_comparison
from asyncfl.output.reading import has_table, read_summary
from asyncfl.output.run_directory import ENDED
from asyncfl.output.tables import pm, write_csv, write_markdown
from asyncfl.study.censoring import run_horizons
from asyncfl.study.seed_statistics import (
    AXES,
    RunRecord,
    bias_rows,
    comparison_rows,
    default_targets,
    run_rows,
    time_to_target_rows,
)

SEED_DIR = re.compile(r"^seed(\d+)$")
STUDY_FILE = "study.yaml"


def write_comparison(
    out_dir: Path, records: Sequence[RunRecord], targets: Sequence[float] = (), title: str = ""
) -> list[Path]:
    """Write every comparison output for ``records`` into ``out_dir``; returns the files written."""
    records = [r for r in records if has_table(r.path / "metrics.csv")]
    if not records:
        raise ConfigError(f"{out_dir}: no finished runs to compare (no metrics.csv found).")
    targets = list(targets) or default_targets(records)
    rows = comparison_rows(records)
    written = [write_csv(out_dir / "comparison.csv", rows), write_csv(out_dir / "runs.csv", run_rows(records))]
    ttt = time_to_target_rows(records, targets, {axis: run_horizons(records, axis) for axis in AXES})
    if ttt:
        written.append(write_csv(out_dir / "time_to_target.csv", ttt))
        intro = TTT_INTRO
        written.append(write_markdown(out_dir / "time_to_target.md", [_ttt_markdown(r) for r in ttt], intro))
    bias = bias_rows(records)
    if len(bias):
        written.append(write_csv(out_dir / "client_accuracy.csv", bias))
        intro = "Accuracy of the final model over clients (FedAR Table 3 layout), averaged over seeds; percent."
        cells = [_bias_markdown(r) for r in bias.to_dict("records")]
        written.append(write_markdown(out_dir / "client_accuracy.md", cells, intro))
    for axis in ("time", "round"):
        path = plot_comparison(rows, axis, out_dir / f"accuracy_vs_{axis}.png", targets, title)
        if path is not None:
            written.append(path)
    return written


TTT_INTRO = (
    "Time to target accuracy in virtual seconds; mean ± std over every seed, a seed that never reached the target"
    " counting as its horizon (its end and last round; for a run that diverged, the horizon it was given: its"
    " stop.virtual_time_s / stop.rounds, else the median of its variant's runs that did not diverge), so the means"
    " are restricted means as in report.md; 'reached' says on how many seeds it got there."
)


def _ttt_markdown(r: dict) -> dict[str, str]:
    return {
        "variant": r["variant"],
        "target": f"{r['target']:g}",
        "reached": f"{r['reached']}/{r['seeds']}",
        "time to target (virtual s)": pm(r["time_to_target_mean_s"], r["time_to_target_std_s"], 0),
        "rounds to target": pm(r["rounds_to_target_mean"], r["rounds_to_target_std"], 1),
        "final accuracy (%)": pm(r["final_accuracy_mean"], r["final_accuracy_std"], 1, 100),
        "best accuracy (%)": pm(r["best_accuracy_mean"], r["best_accuracy_std"], 1, 100),
    }


def _bias_markdown(r: dict) -> dict[str, str]:
    return {
        "variant": r["variant"],
        "seeds": str(r["seeds"]),
        "Mean (%)": pm(r["mean"], r["std"]),
        "Var": f"{r['var']:.1f}",
        "Worst 10%": pm(r["worst10_mean"], r["worst10_std"]),
        "Best 10%": pm(r["best10_mean"], r["best10_std"]),
    }


def is_finished(run_dir: Path) -> bool:
    """Whether a run has ended (summary.json holds finished, target_reached or diverged; not interrupted,
    out_of_memory or failed): a sweep's resume skips it, a report counts it."""
    return read_summary(run_dir, required=False).get("status") in ENDED


def sweep_records(sweep_dir: Path) -> list[RunRecord]:
    """Every run directory ``<variant>/seed<N>/`` of a sweep, variants in study.yaml order."""
    import yaml

    order: list[str] = []
    study = sweep_dir / STUDY_FILE
    if study.is_file():
        raw = yaml.safe_load(study.read_text(encoding="utf-8")) or {}
        order = [v.get("name") for v in raw.get("compare") or [] if isinstance(v, dict)] or ["base"]
    found = sorted(
        (p for p in sweep_dir.glob("*/seed*") if SEED_DIR.match(p.name) and has_table(p / "metrics.csv")),
        key=lambda p: (order.index(p.parent.name) if p.parent.name in order else len(order), p.parent.name,
                       int(SEED_DIR.match(p.name).group(1))),
    )  # fmt: skip
    return [RunRecord(p.parent.name, int(SEED_DIR.match(p.name).group(1)), p) for p in found]


def records_from_paths(paths: Sequence[Path], labels: Sequence[str] = ()) -> list[RunRecord]:
    """Runs named on the command line: a sweep directory contributes all its runs (labelled by
    variant); a run directory is labelled ``--label`` (if given, one per path), else by its variant
    directory when it sits in ``<variant>/seed<N>/``, else by its scenario name.  Runs sharing a
    label are seeds of one variant only if their settings agree (see :func:`split_by_setting`)."""
    if labels and len(labels) != len(paths):
        raise ConfigError(f"--label: give one label per RUN_DIR ({len(paths)}), got {len(labels)}.")
    records: list[RunRecord] = []
    for i, path in enumerate(paths):
        if (path / STUDY_FILE).is_file():
            runs = sweep_records(path)
            prefix = f"{labels[i]}/" if labels else (f"{path.name}/" if len(paths) > 1 else "")
            records += [RunRecord(prefix + r.label, r.seed, r.path) for r in runs]
        elif has_table(path / "metrics.csv"):
            records.append(_single(path, labels[i] if labels else None))
        else:
            raise ConfigError(f"{path}: neither a run directory (metrics.csv) nor a sweep directory ({STUDY_FILE}).")
    return split_by_setting(records, explicit=bool(labels))


# keys that do not change what a run learns: runs differing only here are seeds of one variant
NOT_SETTINGS = ("name", "seed", "output", "checkpoint", "trainer")


def split_by_setting(records: Sequence[RunRecord], explicit: bool) -> list[RunRecord]:
    """Runs that share a label but were made with different settings (config.yaml, apart from
    ``NOT_SETTINGS``) are not seeds of one variant: with labels chosen by the user that is an error
    naming the differing keys; with derived labels (scenario name), each setting becomes its own
    variant, labelled by its values of those keys."""
    by_label: dict[str, list[RunRecord]] = {}
    for record in records:
        by_label.setdefault(record.label, []).append(record)
    relabel: dict[Path, str] = {}
    for label, runs in by_label.items():
        settings = [_setting(r.path) for r in runs]
        keys = sorted({k for s in settings for k in s if any(s.get(k) != other.get(k) for other in settings)})
        if not keys:
            continue
        if explicit:
            raise ConfigError(
                f"--label {label}: these runs differ in {', '.join(keys)}, so they are not seeds of one variant "
                "(only name, seed, output, checkpoint and trainer may differ); give them different labels."
            )
        for run, setting in zip(runs, settings):
            relabel[run.path] = f"{label} (" + ", ".join(f"{k}={setting.get(k)}" for k in keys) + ")"
    return [RunRecord(relabel.get(r.path, r.label), r.seed, r.path) for r in records]


def _setting(run_dir: Path) -> dict[str, object]:
    """A run's config.yaml as {dotted key: value}, without the keys in ``NOT_SETTINGS``."""
    import yaml

    path = run_dir / "config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {}
    flat: dict[str, object] = {}

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            flat[prefix.rstrip(".")] = node

    walk({k: v for k, v in (config or {}).items() if k not in NOT_SETTINGS}, "")
    return flat


def _single(path: Path, label: str | None) -> RunRecord:
    summary = read_summary(path, required=False)
    seed_match = SEED_DIR.match(path.name)
    if label is None:
        label = path.parent.name if seed_match else str(summary.get("scenario") or path.name)
    seed = summary.get("seed")
    return RunRecord(label, int(seed) if seed is not None else None, path)
