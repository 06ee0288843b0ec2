"""flower_digits: the ServerApp, Flower's FedAvg for a number of rounds, each waiting at most `timeout` s."""

from __future__ import annotations

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from flower_digits.task import initial_arrays, run_config_value

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    """Run FedAvg; the round count, the sampled fractions and the reply timeout come from the run config."""
    strategy = FedAvg(
        fraction_train=float(run_config_value(context.run_config, "fraction-train")),
        fraction_evaluate=float(run_config_value(context.run_config, "fraction-evaluate")),
    )
    strategy.start(
        grid=grid,
        initial_arrays=initial_arrays(),
        num_rounds=int(run_config_value(context.run_config, "num-server-rounds")),
        timeout=float(run_config_value(context.run_config, "timeout")),
    )
