"""Atomic file writes: write a temporary file beside the target, then rename it over the target.

A reader never sees a half-written file, and a run killed mid-write leaves the previous version in place (and at
most a stale temporary file, which `remove_stale_temporaries` clears). `torch_save` ends the file with a SHA-256
of its contents and `torch_load` checks it, so that a truncated or overwritten file is refused with its path
(files written before the checksum existed get a load that names the path when it fails).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch


def write_bytes(path: str | Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode())


CHECKSUM_MARK = b"\ntoporag-sha256:"
TEMPORARY_GLOB = ".*.tmp"
ZIP_END = b"PK\x05\x06"  # torch.save's zip archives end with this 22-byte record (no archive comment)


class DamagedFileError(ValueError):
    """A file this project wrote cannot be trusted: truncated, overwritten, or not what it should be."""


def torch_save(obj: Any, path: str | Path) -> Path:
    """`torch.save` atomically, followed by the checksum `torch_load` verifies."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    body = buffer.getvalue()
    return write_bytes(path, body + CHECKSUM_MARK + hashlib.sha256(body).hexdigest().encode())


def _checked_body(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DamagedFileError(f"{path}: cannot be read ({err})") from err
    tail = len(CHECKSUM_MARK) + 64
    if data[-tail:-64] != CHECKSUM_MARK:  # written before checksums (or cut off): a whole zip ends in its EOCD record
        if data[-22:-18] != ZIP_END:
            raise DamagedFileError(f"{path} is damaged: no checksum and no zip end record (truncated?)")
        return data
    body, digest = data[:-tail], data[-64:].decode("ascii", "replace")
    if hashlib.sha256(body).hexdigest() != digest:
        raise DamagedFileError(f"{path} is damaged: its SHA-256 does not match the one written with it")
    return body


def torch_load(path: str | Path, **kwargs: Any) -> Any:
    """Load a file `torch_save` wrote, refusing it (`DamagedFileError`, naming the path) when it is damaged."""
    path = Path(path)
    body = _checked_body(path)
    try:
        return torch.load(io.BytesIO(body), **kwargs)
    except Exception as err:  # a damaged zip fails in many ways
        raise DamagedFileError(f"{path} is damaged or not a torch file: {err}") from err


def is_intact(path: str | Path) -> bool:
    """Whether `path` exists and its checksum (or, for an older file, nothing) says it is whole."""
    try:
        _checked_body(Path(path))
    except DamagedFileError:
        return False
    return True


def remove_stale_temporaries(folder: str | Path, older_than_s: float = 3600.0) -> int:
    """Delete temporary files that killed writes left in `folder` (only old ones: a live writer may own a new
    one); returns how many."""
    removed = 0
    now = time.time()
    for tmp in Path(folder).glob(TEMPORARY_GLOB):
        try:
            if now - tmp.stat().st_mtime > older_than_s:
                tmp.unlink()
                removed += 1
        except FileNotFoundError:
            pass
    return removed


def parse_json(text: str, where: str) -> Any:
    """Parsed JSON, or a DamagedFileError naming where the damaged text came from (a file, a line)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DamagedFileError(f"{where} is damaged (not valid JSON: {err})") from None


def read_json(path: str | Path) -> Any:
    """The JSON in a file this project (or a model folder) holds, or a DamagedFileError naming the file."""
    return parse_json(Path(path).read_text(), str(path))
