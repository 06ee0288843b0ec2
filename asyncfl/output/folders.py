"""Making output directories: a directory that cannot be made (a file in the way, no permission) is a
:class:`ConfigError` naming the path and why, and leaves nothing half made."""

from __future__ import annotations

from pathlib import Path

from asyncfl.errors import ConfigError


def make_directory(path: Path, what: str) -> list[Path]:
    """``mkdir -p path``; returns the directories it made, deepest first.  ``what`` says where the path
    came from (``--out``, ``output.dir``) in the error."""
    made = missing_directories(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        remove_empty(made)
        raise cannot_create(path, what, exc) from None
    return made


def cannot_create(path: Path, what: str, exc: OSError) -> ConfigError:
    """The error for a directory ``path`` that mkdir refused with ``exc``."""
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        why = f"{existing} exists and is not a directory"
    else:
        why = exc.strerror or str(exc)
    return ConfigError(f"{what}: cannot create the directory {path}: {why}.")


def missing_directories(path: Path) -> list[Path]:
    """``path`` and its parents that do not exist yet, deepest first."""
    return [p for p in (path, *path.parents) if not p.exists()]


def remove_empty(folders: list[Path]) -> None:
    """Remove those of ``folders`` (deepest first) that are empty directories."""
    for folder in folders:
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
