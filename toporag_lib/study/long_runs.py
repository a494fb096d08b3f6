"""The testbed's long LLM runs: TopoRAG against G-Retriever, the ablations, frozen and with LoRA, on the full
synthetic-scenes (version 2) split, and TopoRAG with and without 2-cells and G-Retriever on the full ExplaGraphs
split, each recorded in the results ledger when it finishes.

    python -m toporag_lib.study.long_runs --list                 # the jobs, in order, and which are done
    python -m toporag_lib.study.long_runs --shard 0/2 &          # two processes share the jobs
    python -m toporag_lib.study.long_runs --shard 1/2 &
    python -m toporag_lib.study.long_runs --jobs 13,11 &           # chosen jobs, in this order
    python -m toporag_lib.study.long_runs --suite table1 --shard 0/2 &   # every row of the paper's Table 1
    python -m toporag_lib.study.long_runs --park                 # before a session ends: commit parked_runs/

Jobs run in order of importance: the frozen TopoRAG / G-Retriever pair on the testbed, the ExplaGraphs trio (an
epoch there is about 20 minutes), the pair's other two seeds, the three ablations, the LoRA pair, then the three ablations with LoRA. A run is a
`study.experiments.run_cached` run in `cache/long_runs/`: a job killed mid-epoch resumes from its last checkpoint
when the command is run again, and one whose record is in the results ledger (`results/runs/`, committed, so also in a
fresh checkout) is skipped. The run cache is not committed: `--park` copies the last checkpoint of every unfinished
run into `parked_runs/` (`study.parked_runs`; commit it), and the next run of this command, in any checkout, resumes
from there. Each process trains on one torch thread (two
processes on two cores). An epoch over the 1,800 training questions with the bundled 135M LLM takes one to two hours
per core; the full list is about a day on two cores.

`ledger_tables.full_split_table` and `study.paired_runs` read the finished runs back from the ledger (notebook 05,
`results/README.md`).

`--suite table1` runs every method of `experiments.TABLE1_METHODS` (the paper's Table 1 rows we run) on the full
ExplaGraphs split and the full testbed split, seed 42, the inference-only ones first (tens of minutes each), and
`ledger_tables.table1_full_split` sets them beside the paper's numbers; runs it shares with the testbed suite are done once.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from toporag_lib.paths import cache_dir, results_dir
from toporag_lib.settings import merge
from toporag_lib.study import parked_runs, recipe_search
from toporag_lib.study.job_queue import claim, selected
from toporag_lib.study.experiments import (
    ABLATIONS,
    NOT_APPLICABLE,
    PRESETS,
    TABLE1_METHODS,
    config_digest,
    run_cached,
    run_folder,
    variant_config,
)
from toporag_lib.training.ledger import COMMAND_ENV, RECORD, run_id
from toporag_lib.training.run_files import read_metrics
from toporag_lib.training.run_folder import claim_run_folder
from toporag_lib.training.train_config import TrainConfig

DATASET = "synthetic_scenes"
SEEDS = (42, 43, 44)
SERIES_SETTINGS = {"embedding_batching": "single", "llm_dtype": "bfloat16", "max_new_tokens": 32}


def runs_dir() -> Path:
    """The run cache of these jobs (`TOPORAG_CACHE` moves it)."""
    return cache_dir() / "long_runs"


@dataclass(frozen=True)
class Job:
    name: str
    method: str
    change: dict[str, Any]
    seed: int
    dataset: str = DATASET
    series: bool = True  # False: the core suite's own settings, all in `change`

    def config(self) -> TrainConfig:
        # One series, in the settings it began with: one-at-a-time embeddings (before batched ones existed), the
        # LLM in bf16 and a 32-token answer budget (before `llm_dtype="auto"` and the testbed's own budget).
        base = SERIES_SETTINGS if self.series else {}
        return variant_config(self.method, self.dataset, {**base, **self.change}, seed=self.seed)


def jobs() -> list[Job]:
    """Every run, most important first."""
    pair = ("TopoRAG", "G-Retriever")
    first = [Job(method, method, {}, SEEDS[0]) for method in pair]
    no_cells = "w/o CRL (no 2-cells)"
    explagraphs = [Job(method, method, {}, SEEDS[0], "explagraphs") for method in pair]
    explagraphs.append(Job(f"TopoRAG {no_cells}", "TopoRAG", ABLATIONS[no_cells], SEEDS[0], "explagraphs"))
    seeds = [Job(method, method, {}, seed) for seed in SEEDS[1:] for method in pair]
    ablations = [Job(f"TopoRAG {name}", "TopoRAG", change, SEEDS[0]) for name, change in ABLATIONS.items() if change]
    lora = [Job(method, method, {}, SEEDS[0]) for method in ("TopoRAG + LoRA", "G-Retriever + LoRA")]
    lora_ablations = [Job(f"TopoRAG + LoRA {name}", "TopoRAG + LoRA", change, SEEDS[0])
                      for name, change in ABLATIONS.items() if change]  # the paper's Table 2 setting
    return first + explagraphs + seeds + ablations + lora + lora_ablations


def table1_jobs() -> list[Job]:
    """Every Table 1 method on both full splits: the untrained ones first, then the trained, ExplaGraphs first."""
    untrained = [m for m in TABLE1_METHODS if PRESETS[m].get("train") is False]
    trained = [m for m in TABLE1_METHODS if m not in untrained]
    return [Job(method, method, {}, SEEDS[0], dataset) for group in (untrained, trained)
            for dataset in ("explagraphs", DATASET) for method in group if (method, dataset) not in NOT_APPLICABLE]


NO_CELLS = "w/o CRL (no 2-cells)"
CORE_DATASETS = ("synthetic_scenes", "explagraphs")
CORE_SEEDED = ("TopoRAG + LoRA", f"TopoRAG + LoRA {NO_CELLS}", "G-Retriever + LoRA")  # each at every seed
CORE_ONCE = ("TopoRAG", f"TopoRAG {NO_CELLS}", "G-Retriever", "LoRA (text only)")  # each at the first seed


def core_jobs() -> list[Job]:
    """The core comparison, per dataset at the recipe its search chose on validation (`recipe_search.chosen`; a
    dataset whose search is unfinished has no jobs yet): TopoRAG + LoRA with and without its 2-cells and G-Retriever
    + LoRA at every seed, seed by seed, then TopoRAG with and without 2-cells, G-Retriever and LoRA on the text alone
    at the first seed. The recipe's own subsets (`recipe_search.SEARCH_LIMITS`: 800 training questions, 200
    validation questions that select the epoch) and the full test split; in float32 on any CPU (bf16 is emulated
    in software on CPUs without AVX-512 BF16, and the dtype is named so the digest is the same on every machine)."""
    out = []
    for dataset in CORE_DATASETS:
        recipe = recipe_search.chosen(dataset)
        if recipe is None:
            continue
        change = {**recipe.change(), "llm_dtype": "float32"}
        rows = [(name, seed) for seed in SEEDS for name in CORE_SEEDED] + [(name, SEEDS[0]) for name in CORE_ONCE]
        for name, seed in rows:
            method = name.removesuffix(f" {NO_CELLS}")
            ablation = ABLATIONS[NO_CELLS] if method != name else {}
            out.append(Job(name, method, merge(change, ablation), seed, dataset, series=False))
    return out


SUITES = {"testbed": jobs, "table1": table1_jobs, "core": core_jobs}


def adopt_search_run(job: Job) -> Path | None:
    """Where the recipe search trained this very config (a core job at its chosen recipe and seed), and this job's
    run has not started: carry the search run's last checkpoint and selected weights into the job's run folder, so
    it is only scored on the test split (the weights a run from scratch would end with: same config, same seed).
    The job's run folder, or None where there is nothing to adopt."""
    config = job.config()
    search = recipe_search.runs_dir() / job.dataset / config_digest(config)
    if read_metrics(search, recipe_search.SPLIT) is None or not (search / parked_runs.CHECKPOINT).exists():
        return None
    out = run_folder(config, job.name, runs_dir())
    with claim_run_folder(out):
        if parked_runs.progress(out) != parked_runs.NONE:
            return None
        parked_runs.carry(search, out)
    return out


def is_done(job: Job, ledger: Path | None = None) -> bool:
    """Whether the results ledger holds the job's record (the run cache, `runs_dir()`, is not kept in a checkout)."""
    return ((ledger or results_dir() / "runs") / run_id(job.config().to_dict()) / RECORD).exists()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shard", default="0/1", help="i/n: run the jobs whose index is i modulo n")
    parser.add_argument("--suite", default="testbed", choices=sorted(SUITES))
    parser.add_argument("--jobs", help="comma-separated job indices (--list) to run in this order, instead of a shard")
    parser.add_argument("--list", action="store_true", help="list the jobs and whether each is done, then stop")
    parser.add_argument("--park", action="store_true",
                        help=f"copy the last checkpoint of every unfinished run into {parked_runs.PARKED_DIR.name}/ "
                             "(commit it: a fresh checkout resumes from there), then stop")
    args = parser.parse_args(argv)
    if args.park:
        for folder, (epoch, step) in parked_runs.park(runs_dir()):
            print(f"parked {folder} at epoch {epoch}, step {step}")
        return
    todo = SUITES[args.suite]()
    chosen = selected(len(todo), args.shard, args.jobs)
    count = int(args.shard.split("/")[1])
    if args.list:
        for i, job in enumerate(todo):
            print(f"{i:2d} shard {i % count}  {'done' if is_done(job) else 'todo'}  {job.name} on {job.dataset}, "
                  f"seed {job.seed}")
        return
    which = f"--jobs {args.jobs}" if args.jobs else f"--shard {args.shard}"
    os.environ.setdefault(COMMAND_ENV, f"python -m toporag_lib.study.long_runs --suite {args.suite} {which}")
    torch.set_num_threads(1)
    for folder, (epoch, step) in parked_runs.unpark(runs_dir(), results_dir() / "runs"):
        print(f"resuming {folder.name} from its parked checkpoint (epoch {epoch}, step {step})", flush=True)
    for i in chosen:
        job = todo[i]
        if is_done(job):
            print(f"job {i}: {job.name} on {job.dataset} is in the results ledger: skipped", flush=True)
            continue
        lock = claim(job, runs_dir())
        if lock is None:
            print(f"job {i}: {job.name} on {job.dataset} runs in another process: skipped", flush=True)
            continue
        print(f"job {i}: {job.name} on {job.dataset}, seed {job.seed}", flush=True)
        try:
            if adopted := adopt_search_run(job):
                print(f"  trained by the recipe search: {adopted.name} is scored on test only", flush=True)
            run_cached(job.config(), job.name, runs_dir())
            for parked in parked_runs.PARKED_DIR.glob(f"{job.dataset}/*-{config_digest(job.config())}"):
                parked_runs.release(parked)
        finally:
            lock.release()


if __name__ == "__main__":
    main()
