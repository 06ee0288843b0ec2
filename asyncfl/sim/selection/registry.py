"""The selection policies: every module of this package that sets ``KIND`` (a
:class:`~asyncfl.sim.selection.base.SelectionKind`), found by importing them all, plus the kinds user
code registers (``KINDS.register(kind)``) or a plug-in names.  The schema builds ``server.selection``
from :data:`KINDS` when a scenario is validated (:func:`selection_union`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.registry import Registry, discover
from asyncfl.sim.selection.base import ClientFeedback, SelectionKind, SelectionPolicy

PACKAGE = __name__.rpartition(".")[0]

KINDS: Registry = discover(
    PACKAGE, [str(Path(__file__).parent)], "KIND", entry_type=SelectionKind, axis="server.selection.kind"
)
"""kind name -> its registration, in the schema's order (the first, ``uniform``, is the default)."""


def selection_union() -> Any:
    """``server.selection``: one section per registered kind, told apart by ``kind``."""
    return Annotated[Union[tuple(k.section for k in KINDS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]


def default_selection() -> Any:
    """The default ``server.selection``: the first kind with none of its keys set."""
    return next(iter(KINDS.values())).section()


def build_policy(spec: Any, num_clients: int, seed: int) -> SelectionPolicy:
    """The run's policy for a validated ``server.selection`` section."""
    return KINDS[spec.kind].build(spec, num_clients, seed)


def feedback_for(spec: Any, num_clients: int, given: ClientFeedback | None) -> ClientFeedback:
    """The feedback a server hands its policy: the run loop's (``given``), else empty columns, of
    length 0 for a kind that reads none (so a large population pays nothing for it)."""
    if given is not None:
        return given
    return ClientFeedback.empty(num_clients if KINDS[spec.kind].tags.reads_feedback else 0)


def check_selection(spec: Any, mode: str, timing_only: bool) -> None:
    """Raise :class:`ConfigError` if ``server.selection`` cannot serve this scenario: a server mode the kind
    does not list, or a loss-based kind in a timing-only run (nothing is trained, so no losses).  The
    default kind stands for a mode's own rule, so a mode that reads no ``server.selection`` (one added
    by a plug-in) runs with it."""
    kind = KINDS[spec.kind]
    modes = kind.tags.modes
    if mode not in modes and spec != default_selection():
        able = sorted(k.name for k in KINDS.values() if mode in k.tags.modes)
        raise ConfigError(
            f"server.selection.kind {kind.name} serves server.mode {' or '.join(sorted(modes))}, "
            f"but server.mode is {mode}; kinds for {mode}: {', '.join(able)}"
        )
    if kind.tags.needs_losses and timing_only:
        raise ConfigError(
            f"server.selection.kind {kind.name} ranks clients by their training losses, but timing_only "
            "runs train nothing, so there are no losses; use it in a full run (timing_only: false) or "
            "choose a kind that needs no losses (uniform, online)"
        )
