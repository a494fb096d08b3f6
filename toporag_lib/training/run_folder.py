"""One writer per run folder, and only run folders written.

`claim_run_folder` is what every writer of a run folder (the `Trainer`, the command line from its first check to its
ledger record, `study.experiments.run_cached`, `study.recipe_search`, `study.parked_runs.unpark`) takes first, before
it prepares anything: a lock (`toporag_lib.locks`: an flock on `<folder>/.run.lock`, so a lock whose process died is
free) that a second process is refused with `RunFolderInUseError`, naming the folder and the holder (pid, host). A
folder that exists, holds files and is not a run (no `config.json` that reads as a `TrainConfig`: a model folder,
say) is refused with `NotARunFolderError` before anything in it is written or deleted; a missing or empty folder
becomes a run, and a run folder is resumed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toporag_lib import locks
from toporag_lib.training.ledger import with_later_keys
from toporag_lib.training.run_files import CONFIG, read_config
from toporag_lib.training.train_config import TrainConfig

LOCK = ".run.lock"


class RunFolderInUseError(locks.LockHeldError):
    """Another live process is writing this run folder."""

    def __init__(self, folder: Path, holder: dict[str, Any]):
        super().__init__(Path(folder) / LOCK, holder,
                         f"{folder} is in use by another run ({locks.describe(holder)}): one run writes a folder at a "
                         "time; wait for that one to end, or give this one another output folder")
        self.folder = Path(folder)


class NotARunFolderError(ValueError):
    """The output folder holds files and is not a run folder: nothing in it is touched."""


def run_config_problem(folder: Path) -> str | None:
    """Why `folder` is not a run folder (None when its config.json reads as a TrainConfig)."""
    path = Path(folder) / CONFIG
    if not path.is_file():
        return f"it has no {CONFIG}"
    try:
        saved = read_config(folder)
        if not isinstance(saved, dict):
            return f"its {CONFIG} is not a JSON object"
        TrainConfig.from_dict(with_later_keys(saved))
    except (ValueError, TypeError) as err:  # ConfigError and DamagedFileError are ValueErrors
        return f"its {CONFIG} is not a training run's config ({err})"
    return None


def check_run_folder(folder: str | Path) -> None:
    """Refuse (`NotARunFolderError`, or `RunFolderInUseError` when a run that is starting holds it) an existing
    folder that holds files and is not a run folder; creates and changes nothing."""
    folder = Path(folder)
    if not folder.exists():
        return
    if not folder.is_dir():
        raise NotARunFolderError(f"{folder} is a file, not a folder: give the run an output folder")
    if not [entry for entry in folder.iterdir() if entry.name != LOCK]:
        return
    problem = run_config_problem(folder)
    if problem is None:
        return
    holder = locks.holder(folder / LOCK)
    if holder is not None:  # a run starting there, before its config is written
        raise RunFolderInUseError(folder, holder)
    shown = sorted(entry.name for entry in folder.iterdir())
    listing = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
    raise NotARunFolderError(f"{folder} holds files ({listing}) and is not a run folder: {problem}. A run writes "
                             "only a missing or empty folder, or its own run folder: give it another output folder")


def claim_run_folder(folder: str | Path) -> locks.Lock:
    """Hold the run folder `folder` (made if missing) for this process, after `check_run_folder`; release the
    returned lock (or use it in a `with` block) when done. `RunFolderInUseError` when another process holds it."""
    folder = Path(folder)
    lock = folder / LOCK
    if not locks.holds(lock):  # else this process holds it already: nothing to check again
        check_run_folder(folder)
    try:
        return locks.acquire(lock)
    except locks.LockHeldError as err:
        raise RunFolderInUseError(folder, err.holder) from None
