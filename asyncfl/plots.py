"""Figures of a run, drawn from the files in its run directory (so they can be re-rendered later)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and CI
import matplotlib.pyplot as plt  # noqa: E402

from asyncfl.results import read_csv  # noqa: E402


def _floats(rows: list[dict[str, str]], key: str) -> list[float]:
    return [float(r[key]) if r[key] != "" else float("nan") for r in rows]


def plot_accuracy_vs_time(run_dir: Path, title: str | None = None) -> Path:
    """Test accuracy against virtual wall-clock seconds (and against rounds, on a second axis below).

    A run without any accuracy (``timing_only``) gets :func:`plot_timing` instead; the path of the
    figure drawn is returned either way."""
    rows = [r for r in read_csv(run_dir / "metrics.csv") if r["test_accuracy"] != ""]
    if not rows and (run_dir / "rounds.csv").is_file():
        return plot_timing(run_dir, title)
    out = run_dir / "accuracy_vs_time.png"
    fig, (ax_time, ax_round) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    if rows:
        ax_time.plot(_floats(rows, "time"), _floats(rows, "test_accuracy"), marker=".", lw=1.5)
        ax_round.plot(_floats(rows, "round"), _floats(rows, "test_accuracy"), marker=".", lw=1.5, color="C1")
    ax_time.set_xlabel("virtual wall-clock time (s)")
    ax_round.set_xlabel("aggregations (rounds / versions)")
    for ax in (ax_time, ax_round):
        ax.set_ylabel("test accuracy")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    fig.suptitle(title or run_dir.parent.name)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


FAILURES = (("failed_offline", "offline"), ("failed_battery", "battery"), ("failed_deadline", "deadline"))


def plot_timing(run_dir: Path, title: str | None = None) -> Path:
    """Timing-only runs: updates received and failed per aggregation against virtual time (left), and
    the virtual length of every round / interval between async aggregations (right)."""
    rows = read_csv(run_dir / "rounds.csv")
    out = run_dir / "updates_vs_time.png"
    fig, (ax_updates, ax_length) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    if rows:
        t = _floats(rows, "time")
        ax_updates.plot(t, _floats(rows, "received"), marker=".", lw=1.5, label="received")
        for key, label in FAILURES:
            values = _floats(rows, key)
            if any(values):
                ax_updates.plot(t, values, marker=".", lw=1, label=f"failed: {label}")
        ax_updates.legend(fontsize="small")
        lengths = [end - start for end, start in zip(t, _floats(rows, "started"))]
        ax_length.plot(_floats(rows, "round"), lengths, marker=".", lw=1.5, color="k")
    else:
        for ax in (ax_updates, ax_length):
            ax.text(0.5, 0.5, "no aggregation happened", ha="center", va="center", transform=ax.transAxes)
    ax_updates.set_xlabel("virtual wall-clock time (s)")
    ax_updates.set_ylabel("updates per aggregation")
    ax_length.set_xlabel("aggregations (rounds / versions)")
    ax_length.set_ylabel("virtual seconds since the previous aggregation")
    for ax in (ax_updates, ax_length):
        ax.grid(alpha=0.3)
    fig.suptitle(f"{title or run_dir.parent.name} (timing only)")
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
