"""The accuracy measures a study's claims and tuning criteria name, and their labels in report.csv
(:func:`asyncfl.study.seed_statistics.run_measures`); a leaf, so that validating a study loads no pandas."""

import re
from collections.abc import Sequence

from asyncfl.output.columns import CLASS_ACCURACY

ACCURACY_MEASURES = {
    "final_accuracy": "final accuracy",
    "last_quarter_accuracy": "last-quarter accuracy",
    "best_accuracy": "best accuracy",  # the peak of the run's evaluations (a paper's "highest accuracy")
}

# last_quarter:<metrics.csv column>: the column's mean over the evaluations in the last quarter of the run
# (e.g. last_quarter:accuracy_class_9, the class only slow clients hold in FedHist's fairness experiment)
LAST_QUARTER = "last_quarter:"
COLUMN_NAME = re.compile(r"^[A-Za-z_]\w*$")


def column_of(measure: str) -> str | None:
    """The metrics.csv column of a ``last_quarter:<column>`` measure (None for any other measure or a bad name)."""
    if not measure.startswith(LAST_QUARTER):
        return None
    column = measure[len(LAST_QUARTER) :]
    return column if COLUMN_NAME.match(column) else None


def column_label(column: str) -> str:
    """The measure's name in report.csv: 'last-quarter <column>'."""
    return f"last-quarter {column}"


def allowed_columns(column: str, written: Sequence[str]) -> str:
    """What a measure naming ``column``, which the runs do not write, may name instead: the ``written`` columns
    (the per-class ones shortened to their range), and why no per-class column is there when one was named."""
    classes = [c for c in written if c.startswith(CLASS_ACCURACY)]
    plain = [c for c in written if not c.startswith(CLASS_ACCURACY)]
    listed = ", ".join(plain + ([f"{classes[0]} … {classes[-1]}"] if len(classes) > 2 else classes))
    no_classes = column.startswith(CLASS_ACCURACY) and not classes
    return f"allowed: {listed}" + (f" ({CLASS_ACCURACY}<c> only with eval.per_class: true)" if no_classes else "")
