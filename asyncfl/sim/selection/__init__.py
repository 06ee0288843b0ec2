"""Client-selection policies (``server.selection``), one module per kind (issue 21).

A policy decides who a sync round asks (and, where its registration lists ``k_async``, which idle
online client K-async dispatch gives work to next).  The contract is in
:mod:`asyncfl.sim.selection.base`; :mod:`asyncfl.sim.selection.registry` finds every module that sets
``KIND``.  Timing world: no torch, no SimPy.
"""

from __future__ import annotations

from asyncfl.sim.selection.base import (
    ClientFeedback,
    SelectionKind,
    SelectionPolicy,
    SelectionRequest,
    SelectionTags,
    can_take_work,
    checked_in,
)
from asyncfl.sim.selection.registry import (
    KINDS,
    build_policy,
    check_selection,
    default_selection,
    feedback_for,
    selection_union,
)

__all__ = [
    "KINDS",
    "ClientFeedback",
    "SelectionKind",
    "SelectionPolicy",
    "SelectionRequest",
    "SelectionTags",
    "build_policy",
    "check_selection",
    "can_take_work",
    "checked_in",
    "default_selection",
    "feedback_for",
    "selection_union",
]
