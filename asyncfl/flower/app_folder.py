"""A Flower app folder, read as ``flwr run APP_DIR`` reads it: its ``pyproject.toml``'s
``[tool.flwr.app.components]`` (``serverapp`` and ``clientapp``, ``package.module:attribute`` strings) and
``[tool.flwr.app.config]`` (the run config's defaults, nested tables flattened to dotted keys), and the
``--run-config`` overrides in Flower's own syntax (space-separated ``key=value`` pairs, each value TOML, or one
path to a TOML file), parsed and fused by flwr's own functions (``flwr.common.config``: ``flatten_dict``,
``parse_config_args``, ``fuse_dicts``).

The run config a run gets, each layer over the one before (as ``flwr run`` fuses the overrides into the defaults,
a key the app's config does not declare is refused at every layer):

    [tool.flwr.app.config]  <  the scenario's flower.run_config  <  --run-config

The folder is put first on ``sys.path`` while the run lasts (:func:`on_sys_path`), as Flower's ``load_app`` puts
the app's directory there, so that ``serverapp = "my_app.server_app:app"`` imports; ``sys.path`` is restored after.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli
from flwr.common.config import flatten_dict, fuse_dicts, parse_config_args

from asyncfl.config.flower import check_app_spec
from asyncfl.errors import ConfigError

PYPROJECT = "pyproject.toml"
RUN_CONFIG_SYNTAX = "space-separated key=value pairs with TOML values (e.g. 'lr=0.1 name=\"x\"'), or one FILE.toml"


@dataclass(frozen=True)
class AppFolder:
    """What a Flower app folder's ``pyproject.toml`` says: the two apps and the run config's defaults."""

    path: Path  # the folder, absolute
    server_app: str  # [tool.flwr.app.components] serverapp
    client_app: str  # [tool.flwr.app.components] clientapp
    config: dict[str, Any]  # [tool.flwr.app.config], flattened

    @property
    def pyproject(self) -> Path:
        return self.path / PYPROJECT


def is_app_folder(path: Path) -> bool:
    """Is ``path`` a folder (the command's APP_DIR form), not a scenario file?"""
    return path.is_dir()


def read_app_folder(folder: str | Path) -> AppFolder:
    """The app folder at ``folder``; a missing file, bad TOML or a missing key is a :class:`ConfigError`
    naming the file and the key."""
    path = Path(folder).expanduser().resolve()
    pyproject = path / PYPROJECT
    if not pyproject.is_file():
        raise ConfigError(
            f"{pyproject}: no such file; allowed: a Flower app folder, with a {PYPROJECT} holding "
            "[tool.flwr.app.components] (as `flwr new` makes it)"
        )
    try:
        document = tomli.loads(pyproject.read_text(encoding="utf-8"))
    except tomli.TOMLDecodeError as error:  # its message names the line and column
        raise ConfigError(f"{pyproject}: not valid TOML ({error})") from None
    app = document.get("tool", {}).get("flwr", {}).get("app", {})
    components = app.get("components")
    if not isinstance(components, dict):
        raise ConfigError(
            f"{pyproject}: no [tool.flwr.app.components] table; allowed: one with serverapp = "
            "'package.module:attribute' and clientapp = 'package.module:attribute'"
        )
    apps = [_component(components, key, pyproject) for key in ("serverapp", "clientapp")]
    return AppFolder(path, apps[0], apps[1], _defaults(app.get("config", {}), pyproject))


def _component(components: dict, key: str, pyproject: Path) -> str:
    where = f"{pyproject}: [tool.flwr.app.components] {key}"
    if key not in components:
        raise ConfigError(f"{where}: missing; allowed: a 'package.module:attribute' string naming the app")
    try:
        check_app_spec(components[key])
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
    return components[key]


def _defaults(table: Any, pyproject: Path) -> dict[str, Any]:
    where = f"{pyproject}: [tool.flwr.app.config]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: not a table; allowed: a table of bool, int, float or str values")
    try:
        return flatten_dict(table)
    except ValueError as error:  # flwr's words: the key and the allowed types
        raise ConfigError(f"{where}: {error}") from None


def parse_run_config(items: Iterable[str]) -> dict[str, Any]:
    """``--run-config`` items (the flag may be repeated) as ``flwr run`` parses them, flattened."""
    items = list(items)
    try:
        return parse_config_args(items) if items else {}
    except OSError as error:  # the TOML file
        cannot = f"--run-config: cannot read {error.filename} ({error.strerror})"
        raise ConfigError(f"{cannot}; allowed: {RUN_CONFIG_SYNTAX}") from None
    except Exception as error:  # flwr's ValueError, click's ClickException, tomli's TOMLDecodeError
        said = getattr(error, "message", None) or str(error)
        raise ConfigError(f"--run-config {' '.join(items)!r}: {said}; allowed: {RUN_CONFIG_SYNTAX}") from None


def fused_run_config(app: AppFolder, *layers: tuple[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The app's defaults with each ``(where, values)`` layer fused over them in turn, by flwr's ``fuse_dicts``;
    a key not among the app's is a :class:`ConfigError` naming ``where``, the key and the keys there are."""
    fused = dict(app.config)
    for where, values in layers:
        unknown = [key for key in values if key not in app.config]
        if unknown:
            declared = ", ".join(app.config) or "none"
            raise ConfigError(
                f"{where}: {unknown[0]!r} is not a key of {app.pyproject}'s [tool.flwr.app.config] (flwr run refuses "
                f"it too); allowed: {declared}"
            )
        fused = fuse_dicts(fused, dict(values))
    return fused


@contextmanager
def on_sys_path(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while the block runs (Flower's ``load_app`` puts the app's directory
    there); ``sys.path`` as it was afterwards, whatever happens."""
    saved = list(sys.path)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path[:] = saved
