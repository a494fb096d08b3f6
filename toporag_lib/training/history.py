"""A run's history: one row per training step (loss, seconds), then one per epoch's validation (loss, score); the
file `history.csv` it is kept in, and what it says about the run (step time, epochs, the selected epoch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from toporag_lib import atomic

HISTORY_COLUMNS = ["epoch", "step", "loss", "seconds", "val_loss", "val_score"]


def write_history(run_dir: Path, history: list[dict[str, Any]]) -> None:
    atomic.write_text(run_dir / "history.csv", pd.DataFrame(history, columns=HISTORY_COLUMNS).to_csv(index=False))


def read_history(run_dir: str | Path) -> pd.DataFrame:
    """A run's `history.csv` (one row per step, then one per epoch's validation), or a DamagedFileError naming the
    file and what is wrong: other columns, a value that is not a number, a step row without its loss."""
    path = Path(run_dir) / "history.csv"
    try:
        history = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise atomic.DamagedFileError(f"{path} is damaged ({err})") from None
    if list(history.columns) != HISTORY_COLUMNS:
        raise atomic.DamagedFileError(f"{path} is damaged: columns {list(history.columns)}, expected {HISTORY_COLUMNS}")
    for column in HISTORY_COLUMNS:
        values = pd.to_numeric(history[column], errors="coerce")
        bad = history[column].notna() & values.isna()
        if bad.any():
            row = int(bad.idxmax())
            raise atomic.DamagedFileError(f"{path} is damaged: row {row + 2}, {column}={history[column][row]!r} is "
                                          "not a number")
        history[column] = values
    steps = history[history.step.notna()]
    if steps.epoch.isna().any() or steps.loss.isna().any():
        row = int(steps.index[(steps.epoch.isna() | steps.loss.isna()).argmax()])
        raise atomic.DamagedFileError(f"{path} is damaged: row {row + 2} is a step without its epoch or loss")
    return history


def selected_epoch_metrics(history: list[dict], best_epoch: int | None, select_by: str) -> dict[str, Any]:
    """How the evaluated weights were chosen: the criterion, and the validation numbers of the chosen epoch."""
    chosen = [h for h in history if h["step"] is None and h["epoch"] == best_epoch]
    return {"selected_by": select_by, "selected_epoch": None if best_epoch is None else best_epoch + 1,
            "best_val_loss": chosen[0]["val_loss"] if chosen else None,
            "best_val_score": chosen[0].get("val_score") if chosen else None}


def training_metrics(history: list[dict[str, Any]], best_epoch: int | None, select_by: str, epochs_run: int,
                     steps_per_epoch: int) -> dict[str, Any]:
    """The median step time and the epoch time it implies, epochs run, how the evaluated weights were chosen, and
    the validation curve (one entry per epoch)."""
    metrics: dict[str, Any] = {}
    train_steps = [h for h in history if h["step"] is not None]
    if train_steps:
        metrics["seconds_per_step"] = float(np.median([h["seconds"] for h in train_steps]))
        metrics["minutes_per_epoch"] = metrics["seconds_per_step"] * steps_per_epoch / 60
    metrics["epochs_run"] = epochs_run
    metrics.update(selected_epoch_metrics(history, best_epoch, select_by))
    metrics["validation"] = [{"epoch": h["epoch"] + 1, "val_loss": h["val_loss"], "val_score": h["val_score"],
                              **({"by_family": h["val_by_family"]} if h.get("val_by_family") else {})}
                             for h in history if h["step"] is None]  # no by_family in epochs run before it was kept
    return metrics
