"""The one exception type for user-facing configuration problems.

A leaf of the package (it imports nothing): the registries the schema is built from (availability
kinds, data sets, models, partitioners, server modes, algorithms) raise it from below the schema.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A user-facing problem with a scenario: the message is meant to be printed as it is."""
