"""Server modes as SimPy processes, one module per ``server.mode`` (docs/explanation/architecture.md section 4).

Each module exports ``MODE``, a :class:`ServerMode`: its name, the ``server.*`` keys only it reads, its
checks on the rest of the scenario, its default algorithm and its process, a generator over a
:class:`ServerContext`.  The registry is built by importing every module of this package, and the
schema's ``server`` section, its per-mode key rules and the default algorithms are built from it: adding
a mode is adding one file (and an algorithm that states it runs under it).  No torch here.
"""

from __future__ import annotations

from asyncfl.registry import Registry, discover
from asyncfl.sim.servers.base import ClosedRound, RoundHandoff, ServerContext, ServerMode

# in server.mode's order; the first is the default
SERVER_MODES: Registry = discover(__name__, __path__, "MODE", entry_type=ServerMode, axis="server.mode")

__all__ = ["SERVER_MODES", "ClosedRound", "RoundHandoff", "ServerContext", "ServerMode"]
