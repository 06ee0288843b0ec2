"""Finding a user's Flower apps: ``flwr`` itself (an optional extra), and a ServerApp or ClientApp named by the
``package.module:attribute`` string Flower's own tools take (``flwr run``'s ``pyproject.toml`` ``[tool.flwr.app.
components]``), or given as the object.

Every problem is one :class:`~asyncfl.errors.ConfigError` naming where the name came from (``where``: the YAML
path or the command-line flag) and what was expected there, so the command line exits 2 without a traceback.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from asyncfl.config.flower import check_app_spec
from asyncfl.errors import ConfigError

# asyncfl is installed from a checkout (it is not on PyPI): 'asyncfl[flower]' would name nothing pip can find
INSTALL = "pip install 'flwr>=1.42,<2' (or, in a checkout of asyncfl: pip install -e '.[flower]')"
AppKind = Literal["server", "client"]


def require_flwr() -> None:
    """Raise a one-line :class:`ConfigError` with the install command when ``flwr`` cannot be imported."""
    try:
        import flwr  # noqa: F401  (an optional extra: checked here, before anything imports it)
    except ImportError:
        raise ConfigError(f"Flower (flwr) is not installed; install it with: {INSTALL}") from None


@contextmanager
def flwr_log(quiet: bool) -> Iterator[None]:
    """While a quiet run lasts, Flower's logger (``flwr``: its strategies log ~10 INFO lines a round) says only
    warnings and errors; its level is restored afterwards, whatever happens.  Not quiet: Flower's log as it is."""
    logger = logging.getLogger("flwr")
    level = logger.level
    if quiet:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def app_class(kind: AppKind) -> type:
    """``flwr.serverapp.ServerApp`` or ``flwr.clientapp.ClientApp``."""
    require_flwr()
    if kind == "server":
        from flwr.serverapp import ServerApp

        return ServerApp
    from flwr.clientapp import ClientApp

    return ClientApp


def load_app(spec: Any, kind: AppKind, where: str) -> Any:
    """The ServerApp (``kind`` "server") or ClientApp (``kind`` "client") that ``spec`` names: a
    ``package.module:attribute`` string (the attribute may be dotted), or the app object itself.  ``where``:
    the YAML path or the flag the spec came from, named by every error."""
    expected = app_class(kind)
    wanted = f"a flwr.{kind}app.{expected.__name__}"
    if isinstance(spec, expected):
        return spec
    if not isinstance(spec, str):
        raise ConfigError(
            f"{where}: got an object of type {type(spec).__name__}; allowed: {wanted} "
            "or a 'package.module:attribute' naming one"
        )
    app = named_object(spec, where, f"the name of {wanted}")
    if not isinstance(app, expected):
        raise ConfigError(f"{where}: {spec!r} is of type {type(app).__name__}, not {wanted}; allowed: {wanted}")
    return app


def load_function(spec: Any, where: str) -> Any:
    """The function a ``package.module:attribute`` string names (e.g. ``flower.initial_arrays``), or ``spec``
    itself when it is callable; errors name ``where``, as :func:`load_app`'s do."""
    if callable(spec):
        return spec
    found = named_object(spec, where, "the name of a function returning the model's arrays")
    if not callable(found):
        raise ConfigError(f"{where}: {spec!r} names no function; allowed: a function returning the model's arrays")
    return found


def named_object(spec: str, where: str, allowed: str) -> Any:
    """What a ``package.module:attribute`` string names (the attribute may be dotted): the module imported,
    the attributes followed.  Every failure is one ConfigError naming ``where``; ``allowed`` says what the
    attribute should name."""
    try:
        check_app_spec(spec)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
    module_name, attribute = spec.split(":", 1)
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as error:  # the user's module failing to import, for whatever reason: one line, no traceback
        raise ConfigError(
            f"{where}: cannot import module {module_name!r} of {spec!r} ({type(error).__name__}: {error}); "
            f"allowed: an importable module (run from the app's directory, or put it on PYTHONPATH)"
        ) from None
    for name in attribute.split("."):
        if not hasattr(found, name):
            missing = f"{where}: module {module_name!r} has no attribute {attribute!r}"
            raise ConfigError(f"{missing}; allowed: {allowed} in it")
        found = getattr(found, name)
    return found
