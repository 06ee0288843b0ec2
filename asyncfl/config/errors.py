"""The one exception type for user-facing configuration problems.

It lives in a module of its own, importing nothing, so the registries the schema is built from
(availability kinds, data sets, models, partitioners, server modes, algorithms) can raise
it without importing the schema.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A user-facing problem with a scenario: the message is meant to be printed as it is."""
