"""The accuracy measures a study's claims and tuning criteria name, and their labels in report.csv
(:func:`asyncfl.study.seed_statistics.run_measures`); a leaf, so that validating a study loads no pandas."""

import re

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
