"""The ``training`` and ``trainer`` sections: local SGD's settings and how training jobs run.

A light module (no torch): the schema is built from it while a scenario is validated.  The update
rule is in :mod:`asyncfl.learn.trainer`, the choice of executor in :mod:`asyncfl.learn.executors`.

``training.local_work`` says how many local steps a task runs.  The count is decided in the timing
world when the task is planned (``asyncfl.sim.clients.Work.steps``), so compute time, energy and the
training job all follow the same number:

* ``steps``: ``training.local_steps`` for every task (the default);
* ``time_budget``: as many steps as fit a client's speed in ``seconds``, at least one:
  ``max(1, floor(seconds * samples_per_s / batch))`` with ``batch = min(batch_size, train samples)``.
  The budget is on the expected compute time, before ``population.compute.jitter_sigma``'s jitter
  (the client cannot know its jitter in advance), so with jitter a task may overrun it;
* ``epochs``: ``ceil(epochs * train samples / batch)`` steps (FedNova's and FedProx's heterogeneous
  local work: clients with more data do more steps).
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field, model_validator

from asyncfl.errors import ConfigError
from asyncfl.learn.compression import Compression, NoCompression
from asyncfl.sections import OPT_IN, Section


class FixedSteps(Section):
    """``training.local_steps`` steps per task."""

    kind: Literal["steps"] = "steps"

    def work_limits(self) -> dict:
        """Keyword arguments of the timing world's ``Work`` (none: fixed steps)."""
        return {}


class TimeBudget(Section):
    """As many local steps as fit the client's expected speed in ``seconds`` (at least one, at most
    ``max_steps``).  With ``max_steps`` this is FedProx's systems heterogeneity (Li et al. 2020, sec. 5.2):
    every client is asked for the same work and a straggler sends what it managed in the time."""

    kind: Literal["time_budget"]
    seconds: float = Field(gt=0, description="compute time budget per task, virtual seconds (before jitter)")
    max_steps: int | None = Field(
        default=None, ge=1, description="at most this many steps however fast the client (null: no cap)"
    )

    def work_limits(self) -> dict:
        return {"time_budget_s": self.seconds, "max_steps": self.max_steps}


class Epochs(Section):
    """``ceil(epochs * train samples / batch)`` local steps per task."""

    kind: Literal["epochs"]
    epochs: float = Field(gt=0, description="passes over the client's training split per task (may be fractional)")

    def work_limits(self) -> dict:
        return {"epochs": self.epochs}


LocalWork = Annotated[Union[FixedSteps, TimeBudget, Epochs], Field(discriminator="kind")]


class Training(Section):
    """Local SGD on each client."""

    local_steps: int = Field(default=10, ge=1, description="local SGD steps per task")
    batch_size: int = Field(default=32, ge=1, description="clients with fewer samples use all of them")
    lr: float = Field(default=0.05, gt=0, description="local learning rate")
    weight_decay: float = Field(default=0.0, ge=0)
    momentum: float = Field(default=0.0, ge=0, lt=1)
    compression: Compression = Field(
        default=NoCompression(),
        description="what a client uploads: none (the full float32 update), qsgd (stochastic quantisation to "
        "2^bits - 1 levels) or topk (the largest fraction of coordinates, with error feedback); the upload time "
        "and energy follow the compressed size (asyncfl/learn/compression)",
        json_schema_extra=OPT_IN,
    )
    local_work: LocalWork = Field(
        default=FixedSteps(),
        description="steps per task: {kind: steps} (training.local_steps), {kind: time_budget, seconds: T} "
        "(max(1, floor(T * samples_per_s / batch)) steps, on the expected time before jitter) or "
        "{kind: epochs, epochs: E} (ceil(E * train samples / batch) steps)",
        json_schema_extra=OPT_IN,
    )
    prox_mu: float = Field(
        default=0.0,
        ge=0,
        description="FedProx's proximal term (Li et al. 2020, eq. 2): each local step's gradient adds "
        "prox_mu * (w - w_global); 0: off",
        json_schema_extra=OPT_IN,
    )


class Trainer(Section):
    """How training jobs are executed (results are the same either way, to float tolerance)."""

    executor: Literal["auto", "fused", "batched", "sequential"] = Field(
        default="auto",
        description="fused: hand-written batched forward and backward (chains of Linear/ReLU, and of "
        "Conv/ReLU/MaxPool/Flatten/Linear such as cnn1d and lenet5, and the character LSTM lstm_shakespeare); "
        "batched: torch.func vmap over clients (any model); auto: a fixed rule, not timed: fused where it "
        "applies, else batched on CUDA and on CPU up to 1M parameters, but sequential for the LSTM on the CPU "
        "(asyncfl/learn/executors.py)",
    )
    chunk_size: int | None = Field(default=None, ge=1, description="max clients per batched call (memory bound)")
    threads: int | None = Field(
        default=None,
        ge=1,
        description="torch CPU threads while the run trains; null: 1 for models up to 1M parameters on the CPU "
        "(small models only lose to thread contention), else torch's default",
    )
    workers: int | None = Field(
        default=None,
        ge=1,
        description="Ray actors that train the run's jobs, each holding the data and its own trainer; the timing "
        "world stays in this process and a job is sent as soon as its task is queued (null: train here). Needs "
        "the ray extra (docs/how-to/workers.md)",
        json_schema_extra=OPT_IN,
    )
    ray_address: str | None = Field(
        default=None,
        description="with workers: the Ray cluster to join ('auto', 'HOST:PORT' or 'ray://HOST:PORT'); null: "
        "join the Ray instance this process already runs, or start one on this machine",
        json_schema_extra=OPT_IN,
    )
    jobs_per_call: int | None = Field(
        default=None,
        ge=1,
        description="with workers: the most jobs one worker call trains together. Each group of jobs queued at "
        "one aggregation is cut into the fewest calls of at most this many, of near-equal sizes, whatever the "
        "number of workers, so the results do not depend on it; null: 1 for the sequential executor, 8 otherwise",
        json_schema_extra=OPT_IN,
    )
    gpus_per_worker: float | None = Field(
        default=None,
        ge=0,
        description="with workers: GPUs Ray gives each worker (0.5: two workers share one); null: 1 when device "
        "is cuda, else 0",
        json_schema_extra=OPT_IN,
    )
    tf32: bool = Field(
        default=False,
        description="on CUDA (Ampere and later), let convolutions and matrix products use TF32 tensor cores while "
        "the run trains and evaluates: faster for large models, but about 1e-3 relative error per operation, so the "
        "executors' deltas then differ by about 1e-3 (2e-3 for LeNet-5 on an H200). false: full float32 (IEEE), the "
        "executors agree to 1e-5; the caller's torch setting is restored after the run",
        json_schema_extra=OPT_IN,
    )
    precision: Literal["float32", "bfloat16"] = Field(
        default="float32",
        description="bfloat16: local training's forward and backward run under torch.autocast in bfloat16 (CPU and "
        "CUDA; can pay where the hardware has bfloat16 units: AMX on Xeon CPUs, tensor cores on GPUs) while the "
        "parameters, the SGD update, deltas, aggregation and evaluation stay float32; one job's deltas then differ "
        "from float32's by 1e-2 (mlp, cnn2d) to 0.35 (resnet18, 5 steps) of their largest entry "
        "(docs/findings/performance.md). The fused convolution and LSTM kernels are float32 only: auto picks "
        "batched or sequential for those models, and executor fused is refused for them",
        json_schema_extra=OPT_IN,
    )

    @model_validator(mode="after")
    def _worker_keys_need_workers(self) -> Trainer:
        given = [key for key in WORKER_KEYS if getattr(self, key) is not None]
        if self.workers is None and given:
            key = given[0]
            raise ConfigError(f"{key} is read only with workers; allowed: set workers: N, or remove {key}")
        return self


WORKER_KEYS = ("ray_address", "jobs_per_call", "gpus_per_worker")
RAY_MISSING = (
    'trainer.workers: Ray is not installed here; install the extra with pip install -e ".[ray]" (from the '
    "asyncfl checkout) or pip install ray, or remove trainer.workers to train in this process."
)
