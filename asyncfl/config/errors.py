"""The one exception type of user-facing configuration problems (its own module: every layer raises it,
and importing it must not import the schema)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A user-facing problem with a scenario: the message is meant to be printed as it is."""
