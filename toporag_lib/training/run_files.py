"""A run folder's files, named once: `config.json`, `best.pt` (the selected epoch's trainable weights), then per evaluated split `predictions_<split>.jsonl` (one JSON
object per question) and `metrics_<split>.json`. The trainer writes a split's results through
`write_split_results`; the ledger and the studies read them back through the readers here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toporag_lib import atomic

CONFIG = "config.json"
BEST = "best.pt"


def predictions_path(run_dir: str | Path, split: str) -> Path:
    return Path(run_dir) / f"predictions_{split}.jsonl"


def metrics_path(run_dir: str | Path, split: str) -> Path:
    return Path(run_dir) / f"metrics_{split}.json"


def write_predictions(path: str | Path, records: Sequence[dict]) -> Path:
    """Write one JSON object per line, atomically."""
    return atomic.write_text(path, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))


def read_predictions(path: str | Path) -> list[dict]:
    lines = Path(path).read_text().splitlines()
    return [atomic.parse_json(line, f"{path}, line {number}") for number, line in enumerate(lines, 1) if line.strip()]


def write_split_results(run_dir: str | Path, split: str, records: Sequence[dict], metrics: dict[str, Any]) -> None:
    """A split's predictions, then its metrics (whose presence marks the split as scored), each atomically."""
    write_predictions(predictions_path(run_dir, split), records)
    atomic.write_text(metrics_path(run_dir, split), json.dumps(metrics, indent=1))


def read_metrics(run_dir: str | Path, split: str) -> dict[str, Any] | None:
    """The split's metrics, or None when the run has not scored it."""
    path = metrics_path(run_dir, split)
    return atomic.read_json(path) if path.exists() else None


def read_config(run_dir: str | Path) -> dict[str, Any]:
    return atomic.read_json(Path(run_dir) / CONFIG)
