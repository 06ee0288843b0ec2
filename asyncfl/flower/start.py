"""A Flower run from its front doors (:func:`asyncfl.flower.run`, ``python -m asyncfl flower``)."""

from __future__ import annotations


def run_flower(server_app, client_app, scenario, out_dir=None, **options):
    raise NotImplementedError("asyncfl.flower.run: the virtual Grid is being built (issue 31)")
