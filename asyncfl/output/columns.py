"""The columns of every file of a run directory, declared here and nowhere else, each with what it means.

A file's columns are the keys of its dict, in the order they are written; the ``*_COLUMNS`` tuples
are what the writers use.  Columns that exist only with some settings are named by the functions
below (their meanings are in the ``*_OPTIONAL`` dicts).  The strategies' own tables
(``extra_outputs``, e.g. FedHist's) are declared by each strategy: they depend on its parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

PHASES = ("download", "compute", "upload")  # a task's phases, as events.jsonl and timeline_tasks.csv name them

METRICS = {
    "time": "virtual seconds at this evaluation point (0: the initial model)",
    "round": "aggregations so far (the global model's version)",
    "test_accuracy": "the global model's accuracy on the test set (empty when not evaluated)",
    "test_loss": "the global model's loss on the test set (empty when not evaluated)",
    "train_loss": "mean training loss of the updates aggregated in this round",
    "updates": "updates aggregated in this round",
    "staleness_mean": "mean staleness of those updates (versions behind)",
    "wall_seconds": "real seconds since the run started",
}
METRICS_OPTIONAL = {
    "accuracy_class_<c>": "test accuracy on class c (eval.per_class)",
    "utc_time": "the wall-clock date of this virtual time (clock.start_time)",
    "central_accuracy": "a Flower ServerApp's server-side evaluation (its strategy's evaluate_fn) of the global model",
    "central_loss": "the loss that server-side evaluation reports",
}
CENTRAL_COLUMNS = ("central_accuracy", "central_loss")  # a Flower run whose app evaluates on the server: last

ROUNDS = {
    "time": "virtual seconds at the aggregation",
    "round": "the version this aggregation made",
    "started": "virtual seconds at which the round started",
    "selected": "clients selected (sync) or dispatched in the round",
    "received": "updates received",
    "late": "updates that arrived after the round closed",
    "failed_offline": "tasks lost because the client went offline",
    "failed_battery": "tasks lost to an empty battery",
    "failed_deadline": "tasks cut by the round deadline",
    "dropped_stale": "updates dropped as too stale",
    "staleness_mean": "mean staleness of the aggregated updates",
    "staleness_max": "largest staleness of the aggregated updates",
}
ROUND_TIME = {
    "wait_slowest_s": "seconds from the round's start to its last arrival",
    "slowest_task_s": "duration of the slowest received task",
    "lost_s": "client-seconds spent on tasks that failed",
    "lost_compute_s": "of lost_s, the seconds of computing thrown away",
}
ROUNDS_OPTIONAL = {
    "failed_<reason>": "tasks lost for an eligibility reason (population.eligibility), cancelled when an "
    "over-selected round closed (failed_cancelled, server.over_selection), or whose Flower ClientApp raised "
    "(failed_client_app, python -m asyncfl flower)"
}

# written during the run so that figures never re-parse events.jsonl nor re-simulate anything
UPDATES = {
    "round": "the round (aggregation) the update went into: the version it made",
    "client": "the client that sent it",
    "base_version": "the version it was trained from (round - 1 - staleness)",
    "staleness": "versions behind when aggregated",
}
TASKS = {
    "client": "a timeline client (see TIMELINE_SAMPLE)",
    "base_version": "the version the task trained from",
    "start_s": "virtual seconds at its start",
    **{f"{phase}_s": f"virtual seconds at which its {phase} started (empty if never)" for phase in PHASES},
    "end_s": "virtual seconds at its end (arrival, failure, or the end of the run)",
    "outcome": "delivered, a failure reason, or running",
}
OFFLINE = {
    "client": "a timeline client",
    "offline_from_s": "start of an offline period",
    "offline_until_s": "its end",
}

CLIENTS = {
    "client": "client id",
    "samples_per_s": "training speed drawn from the profile",
    "uplink_mbps": "upload bandwidth",
    "downlink_mbps": "download bandwidth",
    "latency_s": "network latency",
    "availability_p": "long-run probability of being online",
    "train_samples": "local training samples (empty when timing only)",
    "test_samples": "local test samples (empty when timing only)",
    "attempts": "tasks started",
    "participations": "updates delivered",
    "failed_offline": "tasks lost offline",
    "failed_battery": "tasks lost to an empty battery",
    "failed_deadline": "tasks cut by a deadline",
    "busy_s": "seconds spent on tasks",
    "energy_j": "joules drawn from the battery",
    "battery_level_j": "battery level at the end (empty without batteries)",
    "accuracy": "the final model's accuracy on the local test split (eval.per_client)",
}
TIME_BREAKDOWN = {
    "download_s": "seconds downloading",
    "compute_s": "seconds computing",
    "upload_s": "seconds uploading",
    "idle_s": "seconds online without a task",
    "offline_s": "seconds unable to take work (offline, or not eligible)",
}
LOST_COMPUTE = "lost_compute_s"  # of compute_s, the part spent on tasks that then failed
CLIENTS_OPTIONAL = {
    LOST_COMPUTE: "of compute_s, the seconds spent on tasks that then failed",
    "failed_<reason>": "tasks lost for an eligibility reason (population.eligibility), cancelled when an "
    "over-selected round closed (failed_cancelled, server.over_selection), or whose Flower ClientApp raised "
    "(failed_client_app, python -m asyncfl flower)",
    "utc_offset_h": "the client's time zone (population.timezones)",
}

WEIGHTS = {
    "round": "the round (aggregation): the version it made",
    "client": "the client whose update was weighted",
    "weight": "its weight in the aggregation",
}  # then the strategy's own columns, sorted (algorithm.record_weights)

METRICS_COLUMNS = tuple(METRICS)
ROUNDS_COLUMNS = tuple(ROUNDS)
ROUND_TIME_COLUMNS = tuple(ROUND_TIME)
UPDATES_COLUMNS = tuple(UPDATES)
TASKS_COLUMNS = tuple(TASKS)
OFFLINE_COLUMNS = tuple(OFFLINE)
CLIENT_COLUMNS = tuple(CLIENTS)
TIME_BREAKDOWN_COLUMNS = tuple(TIME_BREAKDOWN)
WEIGHTS_COLUMNS = tuple(WEIGHTS)

# columns renamed since runs first wrote them (file -> {old name: new name}): an older run directory reads
# with today's names (updates.csv's version became round when the run files took one name for each thing)
RENAMED_COLUMNS = {"updates.csv": {"version": "round"}}

TEXT_COLUMNS = ("utc_time", "outcome")  # the run's text columns (the others are numbers): kept as text in Parquet

# what a reader checks (asyncfl.output.reading): the tables the figures read, with the columns every
# row must fill with a number (a row cut short leaves them empty)
REQUIRED_COLUMNS = {
    "metrics.csv": ("time", "round"),
    "rounds.csv": ("time", "round", "started", "received"),
    "updates.csv": UPDATES_COLUMNS,
    "timeline_tasks.csv": ("client", "base_version", "start_s", "end_s", "outcome"),
    "offline_periods.csv": OFFLINE_COLUMNS,
    "clients.csv": ("client", "samples_per_s", "attempts", "participations"),
}

CLASS_ACCURACY = "accuracy_class_"


def class_accuracy_columns(num_classes: int) -> list[str]:
    """metrics.csv's per-class accuracies (eval.per_class)."""
    return [f"{CLASS_ACCURACY}{c}" for c in range(num_classes)]


def metrics_extra_columns(per_class: int, utc_time: bool) -> list[str]:
    """metrics.csv's columns after :data:`METRICS_COLUMNS` in a run: the accuracy of each of ``per_class``
    classes (eval.per_class: the data set's classes, else 0), then utc_time (with clock.start_time)."""
    return class_accuracy_columns(per_class) + (["utc_time"] if utc_time else [])


def failure_columns(reasons: Sequence[str]) -> list[str]:
    """rounds.csv's and clients.csv's counts of the failure reasons ``population.eligibility`` and
    over-selection (``cancelled``) add."""
    return [f"failed_{r}" for r in reasons]


def rounds_extra_columns(reasons: Sequence[str]) -> list[str]:
    """rounds.csv's columns after :data:`ROUNDS_COLUMNS` in a run: the round times, then the reasons'."""
    return list(ROUND_TIME_COLUMNS) + failure_columns(reasons)


def clients_columns(reasons: Sequence[str], timezones: bool) -> list[str]:
    """clients.csv's columns in a run: the client's profile and counters, where its time went, the
    failure reasons' counts, then its time zone (with ``population.timezones``)."""
    return [
        *CLIENT_COLUMNS, *TIME_BREAKDOWN_COLUMNS, LOST_COMPUTE, *failure_columns(reasons),
        *(["utc_offset_h"] if timezones else []),
    ]  # fmt: skip


def weights_columns(strategy_columns: Iterable[str]) -> list[str]:
    """weights.csv's columns: :data:`WEIGHTS_COLUMNS`, then the strategy's own, sorted
    (``algorithm.record_weights``)."""
    return list(WEIGHTS_COLUMNS) + sorted(set(strategy_columns) - set(WEIGHTS_COLUMNS))
