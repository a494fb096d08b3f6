"""Exclusive locks on files, held by a process for as long as it works on what they guard (a run folder, a queued job).

A lock is an `fcntl.flock` on a lock file, so the operating system lets go of it when its process ends, however it
ends: a lock left by a killed process is free, with nothing to clean up or guess from pids. The file names its
holder (pid, host, since when) for the error a second process gets, and is deleted when the lock is released.
Within one process a lock is re-entrant (counted): `study.experiments.run_cached` holds a run folder from its read-back
to its ledger record while the `Trainer` it makes takes the same folder. Each hold is let go once, by `release()`, a
`with` block's end, or the garbage collector when the hold is dropped (keep it referenced for as long as it should
hold); a forked child never releases its parent's lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class LockHeldError(RuntimeError):
    """Another process holds the lock: `holder` is what it wrote ({} when it had not yet written it)."""

    def __init__(self, path: Path, holder: dict[str, Any], message: str | None = None):
        self.path, self.holder = path, holder
        super().__init__(message or f"{path} is held by {describe(holder)}")


def describe(holder: dict[str, Any]) -> str:
    """"pid 123 on host h, since 2025-01-01 12:00:00 UTC" (or what the holder file leaves of it)."""
    if not holder:
        return "a process that has not yet written its name"
    since = f", since {holder['since']}" if holder.get("since") else ""
    return f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}{since}"


@dataclass
class _Held:
    fd: int
    count: int
    owner: int  # the pid that took it: a forked child inherits the descriptor, not the lock's ownership


_HELD: dict[str, _Held] = {}
_GUARD = threading.Lock()


def _key(path: Path) -> str:
    return str(path.parent.resolve() / path.name)


def _read_holder(fd: int) -> dict[str, Any]:
    """The holder's note, read through `fd` (waiting a moment for a holder that has just taken the lock)."""
    for _ in range(20):
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        if text:
            try:
                holder = json.loads(text)
                return holder if isinstance(holder, dict) else {}
            except json.JSONDecodeError:
                pass
        time.sleep(0.05)
    return {}


def _note() -> bytes:
    return (json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                        "since": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                        "command": " ".join([os.path.basename(sys.executable), *sys.argv])}) + "\n").encode()


def _lock_file(path: Path) -> int:
    """A descriptor of `path` holding its lock; LockHeldError when another process holds it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise LockHeldError(path, holder) from None
        except OSError as err:
            os.close(fd)
            raise OSError(err.errno, f"{path} cannot be locked ({err.strerror}): it must be on a file system with "
                                     "file locks (flock)") from err
        except BaseException:
            os.close(fd)
            raise
        try:  # the holder before us may have deleted the file between our open and our flock: lock the one in place
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        if current is not None and os.path.samestat(os.fstat(fd), current):
            os.ftruncate(fd, 0)
            os.pwrite(fd, _note(), 0)
            return fd
        os.close(fd)


class Lock:
    """One hold of a lock: `release()` (or leaving a `with` block, or being garbage collected) lets go of it once."""

    def __init__(self, path: Path):
        self.path, self._key, self._released = path, _key(path), False

    def release(self) -> None:
        with _GUARD:
            try:
                self._release_held()
            finally:
                _drain()

    def _release_held(self) -> None:  # under _GUARD
        if self._released:
            return
        self._released = True
        held = _HELD.get(self._key)
        if held is None:
            return
        held.count -= 1
        if held.count > 0:
            return
        del _HELD[self._key]
        if held.owner == os.getpid():
            self.path.unlink(missing_ok=True)  # deleted while held: a waiter that opened it retries on a new file
            fcntl.flock(held.fd, fcntl.LOCK_UN)
        os.close(held.fd)

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __del__(self) -> None:
        # The collector may run while this thread holds _GUARD (mid-acquire): then the hold waits for that call's end.
        if not _GUARD.acquire(blocking=False):
            _PENDING.append(self)
            return
        try:
            self._release_held()
            _drain()
        except Exception:  # at interpreter exit the OS lets go of it anyway
            pass
        finally:
            _GUARD.release()


_PENDING: list[Lock] = []


def _drain() -> None:
    """Release the holds that the garbage collector dropped while _GUARD was taken (under _GUARD)."""
    while _PENDING:
        _PENDING.pop()._release_held()


def acquire(path: str | Path) -> Lock:
    """Hold the lock `path` (made with its folder if missing); LockHeldError naming the holder when another process
    holds it. This process may take a lock it holds again: each hold is released on its own."""
    path = Path(path)
    key = _key(path)
    with _GUARD:
        try:
            held = _HELD.get(key)
            if held is not None and held.owner == os.getpid():
                held.count += 1
                return Lock(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            _HELD[key] = _Held(_lock_file(path), 1, os.getpid())
            return Lock(path)
        finally:
            _drain()


def holds(path: str | Path) -> bool:
    """Whether this process holds the lock `path`."""
    with _GUARD:
        held = _HELD.get(_key(Path(path)))
        return held is not None and held.owner == os.getpid()


def try_acquire(path: str | Path) -> Lock | None:
    """`acquire`, or None when another process holds the lock."""
    try:
        return acquire(path)
    except LockHeldError:
        return None


def holder(path: str | Path) -> dict[str, Any] | None:
    """Who holds the lock `path` now ({} when unnamed yet), or None when no other process does; creates nothing."""
    path = Path(path)
    if holds(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_holder(fd)
    finally:
        os.close(fd)  # also lets go of the shared lock just taken
    return None
