"""Holding an output directory (:func:`writing`): one writer per directory.

One writer per directory: two processes writing the same run directory (a run and a
``run --resume`` of it) interleave their appends and leave blocks of NUL bytes in every log.
:func:`writing` takes an exclusive ``flock`` on the directory's ``.lock`` file, without waiting: a
second writer is refused with the PID of the holder (which it writes into the lock file).  The
kernel drops the lock when the holding process dies, however it dies (``kill -9`` included), so a
lock is never stale: a ``.lock`` left behind by a killed run is taken over by the next writer.  The
file is removed when the lock is released.

Hand-written rather than ``filelock``: that package does not record who holds a lock, and the
refusal must name the process.
"""

from __future__ import annotations

import contextlib
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from asyncfl.errors import ConfigError

try:
    import fcntl
except ImportError:  # Windows: msvcrt's byte-range locks, also dropped when the process dies
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".lock"
_WINDOWS_LOCK_BYTE = 1 << 20  # a byte far past the PID text, so that a refused writer can still read it
_held: dict[Path, int] = {}  # directories this process holds -> nesting depth (a run restarted by its resume)


@contextmanager
def writing(directory: Path, kind: str = "run") -> Iterator[None]:
    """Hold ``directory`` (which must exist) for this process while the block writes it; ``kind``
    (run, sweep) names it in the refusal.  Re-entrant within one process."""
    key = Path(os.path.abspath(directory))
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    fd = _acquire(directory, kind)
    _held[key] = 1
    try:
        yield
    finally:
        del _held[key]
        _release(directory / LOCK_FILE, fd)


def refuse_if_written(directory: Path, kind: str = "run") -> None:
    """:func:`writing`'s refusal if another process is writing ``directory``, holding nothing afterwards:
    for a command that checks many directories before it writes into any (one open lock at a time)."""
    with writing(directory, kind):
        return


def holder(directory: Path) -> str | None:
    """Who is writing ``directory`` now ('PID n'; this process too), or None when nobody is: a ``.lock``
    left by a killed writer is not held.  The test takes the lock for an instant (shared, so that two
    readers never collide) and never waits; a writer starting in that instant is refused as if another
    were writing (its message says so, and it changes nothing)."""
    if Path(os.path.abspath(directory)) in _held:
        return f"PID {os.getpid()}"
    try:
        mode = os.O_RDONLY if fcntl is not None else os.O_RDWR  # msvcrt locks need a writable handle
        fd = os.open(directory / LOCK_FILE, mode | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # no lock file: no writer
        return None
    try:
        if fcntl is None:
            free = _try_lock(fd)
            if free:
                import msvcrt

                os.lseek(fd, _WINDOWS_LOCK_BYTE, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            return None if free else _holder(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _acquire(directory: Path, kind: str) -> int:
    path = directory / LOCK_FILE
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise ConfigError(f"{directory}: cannot write in this {kind} directory ({exc.strerror}).") from None
        if not _try_lock(fd):
            holder = _holder(fd)
            os.close(fd)
            raise ConfigError(
                f"{directory}: another process ({holder}) is writing this {kind} directory, and two writers would "
                f"corrupt its files; nothing was changed. Wait until that process ends (or stop it) and try again."
            )
        if _still_at(path, fd):
            break
        os.close(fd)  # the holder before us removed the file between our open and our lock: lock the new one
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _try_lock(fd: int) -> bool:
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    import msvcrt

    os.lseek(fd, _WINDOWS_LOCK_BYTE, os.SEEK_SET)
    try:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


def _still_at(path: Path, fd: int) -> bool:
    """Is the file we locked still the one at ``path``?"""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _holder(fd: int) -> str:
    """'PID n' from the lock file (the holder writes it just after locking: give it a moment)."""
    for _ in range(20):
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", "replace").strip()
        if text.isdigit():
            return f"PID {text}"
        time.sleep(0.05)
    return "PID unknown"


def _release(path: Path, fd: int) -> None:
    if fcntl is not None:
        # removed while still locked (and only if it is ours: a failed start may have emptied the
        # directory): a writer that opened it meanwhile finds it gone and opens a new one
        if _still_at(path, fd):
            path.unlink()
        os.close(fd)
        return
    os.close(fd)  # Windows cannot remove an open file
    with contextlib.suppress(OSError):  # gone, or opened by the next writer meanwhile: theirs now
        path.unlink()
