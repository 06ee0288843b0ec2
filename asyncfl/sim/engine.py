"""The discrete-event engine (SimPy) and the dispatcher's sorted index (sortedcontainers), imported on
first use.  The schema reads the server modes' sections and checks, which live beside their processes,
and validating a scenario must not load the engine (as the algorithm modules hold torch through
:mod:`asyncfl.lazy`).  Module-level code of the timing world must not touch these names."""

from __future__ import annotations

from asyncfl.lazy import LazyModule

simpy = LazyModule("simpy")
sortedcontainers = LazyModule("sortedcontainers")
