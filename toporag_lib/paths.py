"""Where the project keeps caches and results. `TOPORAG_CACHE` and `TOPORAG_RESULTS` override the defaults."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
BUNDLED_DATA = PACKAGE_DIR / "data" / "bundled"  # the shipped datasets, each with its licences
_checkout = PACKAGE_DIR.parent
PROJECT_ROOT = _checkout if (_checkout / "pyproject.toml").exists() else Path.cwd()


def cache_dir() -> Path:
    """Root of the on-disk caches (embeddings, lifted complexes, converted models)."""
    return Path(os.environ.get("TOPORAG_CACHE", PROJECT_ROOT / "cache"))


def results_dir() -> Path:
    """Where notebooks write figures and tables."""
    return Path(os.environ.get("TOPORAG_RESULTS", PROJECT_ROOT / "results"))
