"""make_strategy's ``like`` argument: the strategies that use its values (not just its size, dtype and
device) say so by their ``uses_like_values`` tag (held true by asyncfl.testing's
check_like_values_as_tagged), and the docstring names them."""

from __future__ import annotations

import re

from asyncfl.algorithms import PARAMS, make_strategy


def test_the_docstring_names_every_strategy_that_uses_the_values_of_like():
    uses_values = [name for name, params in PARAMS.items() if params.tags.uses_like_values]
    assert uses_values  # FedAsync: its version history starts with like as version 0
    doc = re.sub(r"\s+", " ", make_strategy.__doc__)
    assert "values" in doc
    for name in uses_values:
        assert name in doc.lower(), f"make_strategy's docstring does not name {name}, which uses like's values"
