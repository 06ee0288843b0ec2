"""The scenario sections whose keys come from registries: ``data`` (``data.dataset``, ``data.partition``,
``data.<name>``), ``model`` (``model.name``, ``model.<name>``), ``server`` (``server.mode`` and every mode's
keys) and ``algorithm`` (one section per algorithm).  Each is built by a function from the registries as
they are when it is called: the schema calls them again when user code or a plug-in registers an entry
(:func:`asyncfl.config.schema.scenario_model`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import Field, create_model, model_validator

from asyncfl.algorithms import PARAMS
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import REGISTRY as DATASET_REGISTRY
from asyncfl.learn.models import REGISTRY as MODEL_REGISTRY
from asyncfl.learn.partition import Partition, partition_union
from asyncfl.learn.partition.iid import IidPartition
from asyncfl.registry import or_list
from asyncfl.sections import OPT_IN, Section
from asyncfl.sim.selection import KINDS as SELECTION_KINDS
from asyncfl.sim.selection import default_selection, selection_union
from asyncfl.sim.servers import SERVER_MODES

INPUT_WORDS = {"signals": "one-dimensional signals", "images": "images", "text": "text"}  # DataSet.inputs, in messages


class DataKeys(Section):
    """Base of ``data``: its shared keys (the allowed values are those of the built-in data sets here;
    :func:`data_section` states the registered ones)."""

    dataset: Literal[tuple(DATASET_REGISTRY)] = "digits"  # type: ignore[valid-type]
    clients: int = Field(default=20, ge=1, description="population size N")
    partition: Partition = IidPartition()
    test_fraction: float = Field(default=0.2, ge=0, lt=1, description="per-client local test split")
    data_dir: Path = Field(default=Path("data"), description="where torchvision data sets live")
    download: bool = Field(default=True, description="download torchvision data sets when missing")

    @model_validator(mode="before")
    @classmethod
    def _natural_by_default(cls, raw: object) -> object:
        """A data set with clients of its own (shakespeare) takes ``partition: {kind: natural}`` when none is set."""
        if isinstance(raw, dict) and "partition" not in raw:
            name = raw.get("dataset", "digits")  # not yet validated: a list or a mapping is refused later
            entry = DATASET_REGISTRY.get(name) if isinstance(name, str) else None
            if entry is not None and entry.natural:
                return {**raw, "partition": {"kind": "natural"}}
        return raw


class ModelKeys(Section):
    """Base of ``model``: its shared keys (:func:`model_section` states the registered names)."""

    name: Literal[tuple(MODEL_REGISTRY)] = "mlp"  # type: ignore[valid-type]
    hidden: int = Field(default=200, ge=1, description="hidden units of the mlp (per hidden layer)")
    layers: int = Field(default=1, ge=1, description="hidden layers of the mlp (MNIST-1D paper's MLP: 2 of 100)")


def _with_own_sections(title: str, shared: type[Section], registry: dict, where: str, **keys: Any) -> type[Section]:
    """``shared`` with ``keys`` restated, plus one ``<entry>`` key per registered entry that brings a section
    of its own keys (``data.synthetic``, ``model.<name>``), after the shared keys."""
    own = {key: (entry.params, entry.params()) for key, entry in registry.items() if entry.params is not None}
    clash = sorted(set(own) & set(shared.model_fields))
    if clash:  # a module's name would hide a shared key
        raise ValueError(f"{where} {clash[0]!r} brings its own section, but {where.split('.')[0]}.{clash[0]} is taken")
    return create_model(title, __base__=shared, __module__=__name__, **keys, **own)  # type: ignore[call-overload]


def data_section() -> type[Section]:
    """``data`` for the registered data sets and partitioners."""
    fields = DataKeys.model_fields
    return _with_own_sections(
        "Data",
        DataKeys,
        DATASET_REGISTRY,
        "data.dataset",
        dataset=(Literal[tuple(DATASET_REGISTRY)], fields["dataset"]),
        partition=(partition_union(), fields["partition"]),
    )


def model_section() -> type[Section]:
    """``model`` for the registered models."""
    name = (Literal[tuple(MODEL_REGISTRY)], ModelKeys.model_fields["name"])
    return _with_own_sections("Model", ModelKeys, MODEL_REGISTRY, "model.name", name=name)


def check_unused_own_sections(section: Section, registry: dict, where: str, chosen: str) -> None:
    """Refuse the own section of an entry not chosen (``data.shakespeare`` with ``data.dataset: digits``) set to
    anything but its defaults: it would be ignored, as a key of another server mode would be.  ``where``: the
    section's YAML path; ``chosen``: the key that picks the entry (``dataset``, ``name``)."""
    picked = getattr(section, chosen)
    for name, entry in registry.items():
        if entry.params is None or name == picked:
            continue
        given, default = getattr(section, name).model_dump(), entry.params().model_dump()
        changed = ", ".join(f"{key}: {value!r}" for key, value in given.items() if value != default.get(key))
        if changed:
            raise ConfigError(
                f"{where}.{name} ({changed}): used only with {where}.{chosen} {name}, but {where}.{chosen} is "
                f"{picked}, where it would be ignored; remove {where}.{name} (or set {where}.{chosen}: {name})"
            )


def check_model_takes_data(model: str, dataset: str) -> None:
    """Raise :class:`ConfigError` for a model that cannot take the data set's inputs (cnn1d on images)."""
    spec, inputs = MODEL_REGISTRY[model], DATASET_REGISTRY[dataset].inputs
    if inputs in spec.inputs:
        return
    fitting_data = sorted(name for name, entry in DATASET_REGISTRY.items() if entry.inputs in spec.inputs)
    fitting_models = [name for name, entry in MODEL_REGISTRY.items() if inputs in entry.inputs]
    raise ConfigError(
        f"model.name {model} {spec.needs or 'cannot take these inputs'}; data.dataset {dataset!r} holds "
        f"{INPUT_WORDS.get(inputs, inputs)}: use it with data.dataset {or_list(fitting_data)}, or choose model.name "
        f"{or_list(fitting_models)}"
    )


class ServerKeys(Section):
    """Base of the flat ``server`` section: ``mode`` plus every mode's own keys (asyncfl.sim.servers)."""

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, raw: object) -> object:
        """null stands for the default of a mode's key, as for the nullable keys: a study variant that
        switches server.mode clears the other mode's keys with null (a mapping is merged key by key)."""
        if not isinstance(raw, dict):
            return raw
        fields = cls.model_fields
        return {k: fields[k].default if v is None and k in fields and k != "mode" else v for k, v in raw.items()}


def mode_keys() -> dict[str, tuple[str, ...]]:
    """The keys that only one server mode reads: set in another mode they would be silently ignored."""
    return {name: tuple(mode.keys.model_fields) for name, mode in SERVER_MODES.items()}


def server_section() -> type[Section]:
    """``server`` for the registered server modes and selection policies (``server.selection``, read by
    every mode whose name the policy's registration lists)."""
    return create_model(  # type: ignore[call-overload]
        "Server",
        __base__=ServerKeys,
        __module__=__name__,
        mode=(
            Literal[tuple(SERVER_MODES)],
            Field(
                default=next(iter(SERVER_MODES)),
                description=or_list([mode.summary for mode in SERVER_MODES.values()]),
            ),
        ),
        selection=(
            selection_union(),
            Field(
                default=default_selection(),
                description="who is asked to work: "
                + "; ".join(f"{name} ({kind.summary})" for name, kind in SELECTION_KINDS.items()),
                json_schema_extra=OPT_IN,
            ),
        ),
        **{
            key: (field.annotation, field)
            for mode in SERVER_MODES.values()
            for key, field in mode.keys.model_fields.items()
        },
    )


def algorithm_union() -> Any:
    """``algorithm``: one section per registered algorithm, told apart by ``name``."""
    return Annotated[Union[tuple(PARAMS.values())], Field(discriminator="name")]  # type: ignore[valid-type]


def default_algorithms() -> dict[str, str]:
    """server.mode -> the algorithm it runs when ``algorithm`` is not set."""
    return {name: mode.default_algorithm for name, mode in SERVER_MODES.items()}


def algorithm_field() -> Any:
    """The ``algorithm`` key: null stands for the mode's default algorithm."""
    defaults = or_list([f"{name} ({mode})" for mode, name in default_algorithms().items()])
    return Field(default=None, description="defaults to " + defaults)
