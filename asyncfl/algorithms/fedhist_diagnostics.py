"""FedHist's utility diagnostics (``algorithm.diagnostics``): does the history window h let eqs. 9-13 run?

Eqs. 9-13 evaluate, after round r, the local gradients aggregated in round r - h against
S = the buffered local gradients whose base version is r - h (fedhist.txt section II-D).  If the
task time in rounds (the mean staleness, ~N/K in this simulator) is longer than h, few of the updates
dispatched at r - h have come back by round r, S is empty and no utility is evaluated.  Per run:

rounds               aggregations (HAA on)
rounds_evaluable     those whose round r - h is still in L (r >= h, counting rounds from 0)
rounds_evaluated     those where |S| > 0, i.e. eqs. 9-13 ran
evaluated_fraction   rounds_evaluated / rounds
mean_fresh           mean |S| over the evaluable rounds (an empty S counts as 0)
mean_fresh_evaluated mean |S| over the evaluated rounds
mean_staleness       mean staleness (versions behind) of the aggregated updates: the task time in rounds
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

DIAGNOSTICS_FILE = "fedhist_diagnostics.csv"


@dataclass
class UtilityDiagnostics:
    rounds: int = 0
    rounds_evaluable: int = 0
    rounds_evaluated: int = 0
    fresh_total: int = 0  # sum of |S| over the evaluable rounds
    updates: int = 0
    staleness_total: int = 0

    def aggregated(self, staleness: Sequence[int]) -> None:
        """One round of HAA aggregation with these staleness values."""
        self.rounds += 1
        self.updates += len(staleness)
        self.staleness_total += sum(staleness)

    def evaluable(self, fresh: int) -> None:
        """Round r - h was in L and S held ``fresh`` local gradients."""
        self.rounds_evaluable += 1
        self.fresh_total += fresh
        self.rounds_evaluated += fresh > 0

    def row(self) -> dict[str, float | int]:
        def ratio(a: float, b: float) -> float:
            return a / b if b else float("nan")

        return {
            "rounds": self.rounds,
            "rounds_evaluable": self.rounds_evaluable,
            "rounds_evaluated": self.rounds_evaluated,
            "evaluated_fraction": ratio(self.rounds_evaluated, self.rounds),
            "mean_fresh": ratio(self.fresh_total, self.rounds_evaluable),
            "mean_fresh_evaluated": ratio(self.fresh_total, self.rounds_evaluated),
            "mean_staleness": ratio(self.staleness_total, self.updates),
        }

    def state_dict(self) -> dict[str, int]:
        return asdict(self)

    def load_state_dict(self, state: dict[str, int]) -> None:
        for name, value in state.items():
            setattr(self, name, int(value))
