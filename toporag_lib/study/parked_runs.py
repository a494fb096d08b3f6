"""Unfinished long runs carried from one checkout to the next.

The run cache (`cache/`) is not committed, so a long run cut off by the end of a working session would start over in
a fresh checkout. `park` copies each unfinished run's `config.json`, last checkpoint and selected epoch's weights
(`best.pt`, which the run's evaluation loads) into `parked_runs/` (commit it); `unpark` puts them back into the run
cache before the queue runs, unless the cache already holds a checkpoint as far on; `release` deletes a run's parked copy once its record is in the results ledger. A checkpoint holds the
trainable weights, the optimizer, scheduler and random states (`training.trainer`), so the resumed run ends with the
weights an uninterrupted one would have. A parked checkpoint stays in git history for good (TopoRAG + LoRA with the
bundled 135M LLM: 38 MB, mostly Adam's moments): park a run that would take hours to redo, not one that a session
can finish or repeat.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from toporag_lib import atomic
from toporag_lib.paths import PROJECT_ROOT
from toporag_lib.training.ledger import RECORD
from toporag_lib.training.run_files import BEST, CONFIG
from toporag_lib.training.run_folder import RunFolderInUseError, claim_run_folder

PARKED_DIR = PROJECT_ROOT / "parked_runs"
CHECKPOINT = "checkpoint.pt"
CARRIED = (CONFIG, CHECKPOINT)  # what `Trainer.resume` reads back
SELECTED = BEST  # carried too once the run has selected an epoch: the weights its evaluation loads


Progress = tuple[int, int]  # (epoch, step within it) of a checkpoint, as `Trainer.state` counts them
NONE: Progress = (-1, -1)


def progress(run: Path) -> Progress:
    """How far a run folder's intact checkpoint is, or `NONE` when it has none (or a damaged one)."""
    path = run / CHECKPOINT
    if not atomic.is_intact(path):
        return NONE
    state = atomic.torch_load(path, weights_only=True)["state"]
    return int(state["epoch"]), int(state["step"])


def unfinished(runs_dir: Path) -> list[Path]:
    """Run folders (`<runs_dir>/<dataset>/<name>-<config hash>`) with a checkpoint and no metrics yet (a run ends by
    scoring one split: test, or validation in `study.recipe_search`)."""
    runs = (path.parent for path in sorted(Path(runs_dir).glob(f"*/*/{CHECKPOINT}")))
    return [run for run in runs if not any(run.glob("metrics_*.json"))]


def carry(source: Path, target: Path) -> None:
    """Copy a run's config, last checkpoint and (where it has one) selected weights from one run folder to another."""
    for name in CARRIED:
        atomic.write_bytes(target / name, (source / name).read_bytes())
    if (source / SELECTED).exists():
        atomic.write_bytes(target / SELECTED, (source / SELECTED).read_bytes())
    else:  # a stale one from an earlier attempt would be evaluated as this run's selection
        (target / SELECTED).unlink(missing_ok=True)


def park(runs_dir: Path, parked_dir: Path | None = None) -> list[tuple[Path, Progress]]:
    """Copy every unfinished run with an intact checkpoint into `parked_dir` (default `PARKED_DIR`); (parked folder,
    progress) of each."""
    parked_dir, parked = parked_dir or PARKED_DIR, []
    for run in unfinished(runs_dir):
        reached = progress(run)
        if reached == NONE or not (run / CONFIG).exists():
            continue
        target = parked_dir / run.parent.name / run.name
        if progress(target) < reached:
            carry(run, target)
        parked.append((target, reached))
    return parked


def _recorded(run: Path, ledger: Path) -> bool:
    """Whether the ledger holds the record of the run in folder `<dataset>/<name>-<config hash>`."""
    return (ledger / f"{run.parent.name}-{run.name.rsplit('-', 1)[-1]}" / RECORD).exists()


def unpark(runs_dir: Path, ledger: Path, parked_dir: Path | None = None) -> list[tuple[Path, Progress]]:
    """Put each parked run whose record is not in `ledger` back into `runs_dir` where the cache has no checkpoint as
    far on (a parked run already recorded is released), and no live run holds it (`training.run_folder`); (run
    folder, progress) of each one put back."""
    parked_dir, restored = parked_dir or PARKED_DIR, []
    for parked in (path.parent for path in sorted(parked_dir.glob(f"*/*/{CHECKPOINT}"))):
        if _recorded(parked, ledger):
            release(parked)
            continue
        reached = progress(parked)
        if reached == NONE:
            raise atomic.DamagedFileError(f"{parked / CHECKPOINT} fails its checksum: delete {parked} to restart "
                                          "that run from its beginning")
        target = runs_dir / parked.parent.name / parked.name
        try:
            with claim_run_folder(target):
                if progress(target) < reached:
                    carry(parked, target)
                    restored.append((target, reached))
        except RunFolderInUseError:  # a live run writes it: it goes on from its own checkpoint
            continue
    return restored


def release(parked: Path) -> None:
    """Delete a parked run's folder (and its dataset folder once empty)."""
    shutil.rmtree(parked, ignore_errors=True)
    if parked.parent.exists() and not any(parked.parent.iterdir()):
        parked.parent.rmdir()
