"""The command line (``python -m asyncfl``, the ``asyncfl`` script): see :mod:`asyncfl.cli.main`."""

from asyncfl.cli.main import main

__all__ = ["main"]
