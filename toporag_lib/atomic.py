"""Atomic file writes: write a temporary file beside the target, then rename it over the target.

A reader never sees a half-written file, and a run killed mid-write leaves the previous version in place.
"""

from __future__ import annotations

import io
import os
import tempfile
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


def torch_save(obj: Any, path: str | Path) -> Path:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return write_bytes(path, buffer.getvalue())
