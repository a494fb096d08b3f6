"""What the resumable run queues (`long_runs`, `recipe_search`) share: which jobs a process takes, and the lock that
keeps two processes off one job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toporag_lib import locks
from toporag_lib.study.experiments import config_digest


def claim(job: Any, folder: Path) -> locks.Lock | None:
    """The job's lock in `folder/locks` (`toporag_lib.locks`; release it when the job ends), or None when another
    live process holds it (two suites may share a run: the second one skips it). A lock whose process is gone is
    free: the operating system let go of it when that process ended. The run folder has its own lock too
    (`training.run_folder`); this one is per job (its dataset and config hash), whatever folder name its run gets."""
    return locks.try_acquire(folder / "locks" / f"{job.dataset}-{config_digest(job.config())}.lock")


def selected(count: int, shard: str, jobs: str | None = None) -> list[int]:
    """The indices to run, in order: `jobs` ("13,11") as given, else those of the shard "i/n" (index i modulo n)."""
    if jobs:
        chosen = [int(part) for part in jobs.split(",")]
        if bad := [i for i in chosen if not 0 <= i < count]:
            raise SystemExit(f"--jobs {jobs}: no job {bad[0]} (the suite has jobs 0-{count - 1}; see --list)")
        return chosen
    index, parts = (int(part) for part in shard.split("/"))
    if not 0 <= index < parts:
        raise SystemExit(f"--shard {shard}: expected i/n with 0 <= i < n")
    return [i for i in range(count) if i % parts == index]
