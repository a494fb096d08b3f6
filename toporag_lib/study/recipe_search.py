"""The training recipe, chosen on the validation split: a small search over schedules and learning rates, every run
scored on validation only and recorded in its own ledger, `results/recipe_search/` (the test split is never read).

    python -m toporag_lib.study.recipe_search --list          # the jobs and which are done
    python -m toporag_lib.study.recipe_search --shard 0/2 &   # two processes share them, one torch thread each
    python -m toporag_lib.study.recipe_search --park          # before a session ends: commit parked_runs/recipe_search

Every recipe trains up to `MAX_EPOCHS` epochs (one, added later, up to the paper's 10), shuffled per epoch, keeps the epoch with the best validation score
and stops after `patience` epochs without one (the paper's early stopping); the recipes differ in the schedule
(constant against warm-up and cosine decay) and the learning rates. The search runs on `SEARCH_LIMITS`: a seeded
subset of the training split and of the validation split, which makes an epoch a few minutes on one core; the
validation score reported is the selected epoch's, on the same questions that selected it (a search, not an
estimate). A run killed mid-epoch resumes from its checkpoint; `--park` carries unfinished runs across checkouts
(`study.parked_runs`).
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from toporag_lib import atomic
from toporag_lib.paths import cache_dir, results_dir
from toporag_lib.study import parked_runs
from toporag_lib.data.registry import majority_score
from toporag_lib.settings import merge
from toporag_lib.study.experiments import ABLATIONS, config_digest, variant_config
from toporag_lib.study.job_queue import claim, selected
from toporag_lib.training.ledger import COMMAND_ENV, RECORD, read_ledger, record_run, run_id
from toporag_lib.training.run_files import read_metrics
from toporag_lib.training.run_folder import claim_run_folder
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import Trainer

SPLIT = "val"
MAX_EPOCHS = 6
PAPER_MAX_EPOCHS = 10
SEARCH_LIMITS = {"train": 800, "val": 200}
COMMON = {"epochs": MAX_EPOCHS, "patience": 2, "select_by": "val_score", "limits": SEARCH_LIMITS}
RECIPES: dict[str, dict[str, Any]] = {
    "cosine 1e-3, warm-up 0.1": {"schedule": "cosine", "warmup_ratio": 0.1, "lr": 1e-3, "lora_lr": 1e-3},
    "constant 1e-3 (the project's default rates)": {"schedule": "constant", "warmup_ratio": 0.0, "lr": 1e-3,
                                                    "lora_lr": 1e-3},
    "cosine 1e-3, LoRA 1e-4, warm-up 0.1": {"schedule": "cosine", "warmup_ratio": 0.1, "lr": 1e-3, "lora_lr": 1e-4},
    "cosine 1e-4, warm-up 0.1": {"schedule": "cosine", "warmup_ratio": 0.1, "lr": 1e-4, "lora_lr": 1e-4},
    "cosine 1e-5, warm-up 0.1 (the paper's rates)": {"schedule": "cosine", "warmup_ratio": 0.1, "lr": 1e-5,
                                                     "lora_lr": 1e-5},
    # added after constant 1e-3 was still rising at its sixth epoch: the paper's limit of 10 epochs
    "constant 1e-3, up to 10 epochs": {"schedule": "constant", "warmup_ratio": 0.0, "lr": 1e-3, "lora_lr": 1e-3,
                                       "epochs": PAPER_MAX_EPOCHS},
}


def ledger_dir() -> Path:
    return results_dir() / "recipe_search"


def runs_dir() -> Path:
    return cache_dir() / "recipe_search"


def parked_dir() -> Path:
    return parked_runs.PARKED_DIR / "recipe_search"


@dataclass(frozen=True)
class Job:
    recipe: str
    method: str = "TopoRAG + LoRA"
    dataset: str = "explagraphs"
    seed: int = 42
    ablation: str = ""  # one of `experiments.ABLATIONS`, applied to `method`
    version: int | None = None  # the testbed version (`dataset_options`)
    question_first: bool = False  # the prompt layout (`ModelConfig.question_first`)
    max_txt_len: int | None = None  # the graph text's cut in LLM tokens (None: `TrainConfig`'s, 512)
    llm_dtype: str = "bfloat16"  # named, never "auto", whose resolution depends on the machine (and so the digest)
    readout: str = "mean"  # the soft prompt's POOL (`ModelConfig.readout`): the paper's mean, or "question"

    @property
    def name(self) -> str:
        return " · ".join(part for part in (self.method + (f" {self.ablation}" if self.ablation else ""),
                                            self.recipe, f"version {self.version}" if self.version else "",
                                            "question first" if self.question_first else "",
                                            f"graph text up to {self.max_txt_len} tokens" if self.max_txt_len else "",
                                            "" if self.llm_dtype == "bfloat16" else self.llm_dtype,
                                            "" if self.readout == "mean" else f"{self.readout}-conditioned pool")
                          if part)

    def change(self) -> dict[str, Any]:
        """The recipe as changes over a method's config: schedule, rates, epochs, subsets, layout, cut, dtype (and
        the testbed version); without the ablation, which belongs to the method."""
        change = {**COMMON, **RECIPES[self.recipe]}
        if self.version is not None:
            change["dataset_options"] = {"version": self.version}
        if self.question_first:
            change = merge(change, {"model": {"question_first": True}})
        if self.readout != "mean":
            change = merge(change, {"model": {"readout": self.readout}})
        if self.max_txt_len is not None:
            change["max_txt_len"] = self.max_txt_len
        change["llm_dtype"] = self.llm_dtype
        return change

    def config(self) -> TrainConfig:
        ablation = ABLATIONS[self.ablation] if self.ablation else {}
        return variant_config(self.method, self.dataset, merge(self.change(), ablation), seed=self.seed)


# On testbed version 3 (twins) the search starts from ExplaGraphs' best recipe, TopoRAG + LoRA with and without its
# 2-cells (the comparison the testbed exists for), then the schedules it left close.
# Then the question before the graph text (added after job 6's first epoch, 0.37 on validation: a 135M LLM that
# reads ~600 tokens of graph before it learns what is asked), at the recipe the search started from, with the graph
# text cut at 1024 tokens, not 512: version 3's TopoRAG text is 585 tokens on average (p90 807) and the cut at 512
# dropped the end of 62% of the validation texts, where the cycle table stands; without 2-cells it is 255 (max 352).
# And in float32, named: on a CPU with AVX-512 BF16 but no AMX (this project's Xeon) "auto" resolves to bfloat16, and
# a TopoRAG + LoRA step of these jobs took 0.64 of bfloat16's CPU time in float32 (median of 5 interleaved steps);
# a named dtype also keeps a job's digest the same on any machine that resumes it.
TESTBED_FIRST_RECIPE = "constant 1e-3, up to 10 epochs"
TESTBED_JOBS = [Job(recipe, dataset="synthetic_scenes", ablation=ablation, version=3)
                for recipe in (TESTBED_FIRST_RECIPE, "cosine 1e-3, LoRA 1e-4, warm-up 0.1")
                for ablation in ("", "w/o CRL (no 2-cells)")] + [
    Job(TESTBED_FIRST_RECIPE, dataset="synthetic_scenes", ablation=ablation, version=3, question_first=True,
        max_txt_len=1024, llm_dtype="float32")
    for ablation in ("", "w/o CRL (no 2-cells)")]


# Then the question-first layout on ExplaGraphs at its best recipe (0.725, question last), in float32: its question
# ("Argument 1: ... Argument 2: ...") is most of what it asks, and its graph text is short (no cut at 512).
LATER_JOBS = [Job(TESTBED_FIRST_RECIPE, question_first=True, llm_dtype="float32")]

# Then job 10 with the soft prompt pooled against the question (`nn.readout`), not by the paper's mean: in the LLM-free
# probe a mean readout left the loop unread (twin accuracy with minus without 2-cells -0.002, -0.013 to +0.009), and
# a readout that weighs each cell by its match with the question read it over the plain cell states this encoder
# computes (probe readout "attention, plain inputs"). Without it, the soft prompt cannot say which loop is asked about.
LATER_JOBS.append(Job(TESTBED_FIRST_RECIPE, dataset="synthetic_scenes", version=3, question_first=True,
                      max_txt_len=1024, llm_dtype="float32", readout="question"))


# Jobs left out of the choice (each keeps its index, and its record where it has one), and why.
DROPPED = {
    4: "the paper's rates (cosine 1e-5): at 1e-4 the same schedule already trailed constant 1e-3 by 0.075",
    6: "question last, cut at 512, in bfloat16: 0.37 on validation after its first epoch; job 10 replaces it",
    7: "job 6 without 2-cells; job 11 replaces it",
    8: "cosine decay on the testbed: on ExplaGraphs every cosine recipe trailed constant 1e-3 (0.64-0.675 vs 0.725)",
    9: "job 8 without 2-cells",
}


def jobs() -> list[Job]:
    """Every recipe for TopoRAG + LoRA on ExplaGraphs, most informative first, then the testbed's, then later ones
    (appended, so every job keeps its index)."""
    return [Job(recipe) for recipe in RECIPES] + TESTBED_JOBS + LATER_JOBS


def is_done(job: Job, ledger: Path | None = None) -> bool:
    return ((ledger or ledger_dir()) / run_id(job.config().to_dict()) / RECORD).exists()


def val_scores(ledger: Path | None = None) -> dict[str, float]:
    """Each recorded run's validation score (checked against its predictions) by run id (`ledger.run_id`)."""
    return {run_id(r["config"]): r["metrics"]["score"] for r in read_ledger(ledger or ledger_dir())}


def val_score(config: TrainConfig, ledger: Path | None = None) -> float | None:
    """The validation score of the run of `config`, None while the ledger has no record of it."""
    return val_scores(ledger).get(run_id(config.to_dict()))


def chosen(dataset: str, ledger: Path | None = None) -> Job | None:
    """The recipe chosen for `dataset` on validation: of its TopoRAG + LoRA jobs with 2-cells that are not
    `DROPPED`, the one with the best validation score (the first listed on a tie); None while one has no record."""
    candidates = [job for i, job in enumerate(jobs())
                  if job.dataset == dataset and not job.ablation and i not in DROPPED]
    recorded = val_scores(ledger)  # read once for every candidate
    scores = [recorded.get(run_id(job.config().to_dict())) for job in candidates]
    if not candidates or None in scores:
        return None
    return candidates[scores.index(max(scores))]


def run_validation(config: TrainConfig, name: str, runs: Path, ledger: Path, progress: bool = True) -> Path:
    """Train `config` in `runs/<dataset>/<digest>` (resuming from a checkpoint), generate on the validation split
    with the selected epoch's weights and record the run in `ledger`; the ledger folder."""
    out = runs / config.dataset / config_digest(config)
    with claim_run_folder(out):  # one writer from the read-back to the record
        if read_metrics(out, SPLIT) is None:
            with Trainer(config, out, progress) as trainer:
                trainer.resume()
                trainer.train()
                trainer.evaluate(SPLIT)
        return record_run(out, ledger, name, split=SPLIT)


def progress_line(job: Job) -> str:
    """Where an unfinished job's run stands (from its checkpoint in the run cache): the epoch and step it resumes
    at, and the validation score of every epoch it finished; "" when it has not started."""
    run = runs_dir() / job.dataset / config_digest(job.config())
    epoch, step = parked_runs.progress(run)
    if (epoch, step) == parked_runs.NONE:
        return ""
    history = atomic.torch_load(run / parked_runs.CHECKPOINT, weights_only=True)["state"]["history"]
    validated = [h for h in history if h["step"] is None and h.get("val_score") is not None]
    scores = ", ".join(f"{h['epoch'] + 1}: {h['val_score']:.3f}" for h in validated)
    families = validated[-1].get("val_by_family") if validated else None
    detail = "; ".join(f"{family} {seen['accuracy']:.3f}" + (f" (one answer {seen['one_answer']:.2f})"
                                                              if "one_answer" in seen else "")
                       for family, seen in (families or {}).items())
    return (f"at epoch {epoch + 1}, step {step}" + (f"; validation by epoch {scores}" if scores else "")
            + (f"; epoch {validated[-1]['epoch'] + 1} by family: {detail}" if detail else ""))


def one_answer_share(predictions: list[dict[str, Any]], family: str | None = None) -> float:
    """The share of questions (of `family`, if given) given the most common answer (1.0: the run says one thing
    to everything)."""
    counts = Counter(p["pred"].strip().lower() for p in predictions if family is None or p.get("family") == family)
    return max(counts.values()) / sum(counts.values()) if counts else float("nan")


def search_table(ledger: Path | None = None) -> pd.DataFrame:
    """One row per recorded search run: recipe, validation score beside the majority answer's on the same questions
    (`registry.majority_score`), the selected and the last epoch, the share of the most common answer (overall and
    on loop questions), and on the testbed the accuracy per family and the loop family's twin accuracy, and the share
    of validation graph texts cut at `max_txt_len` (nan where a run has none)."""
    rows = []
    for record in read_ledger(ledger or ledger_dir()):  # each checked against its validation predictions
        metrics, config, predictions = record["metrics"], record["config"], record["predictions"]
        per_family = metrics.get("per_family", {})
        rows.append({"dataset": config["dataset"], "version": config.get("dataset_options", {}).get("version"),
                     "question_first": config["model"].get("question_first", False),
                     "run": record["name"], "seed": config["seed"],
                     "n_val": metrics["n"], "val_score": metrics["score"],
                     "majority": majority_score(config["dataset"], predictions),
                     "selected_epoch": metrics.get("selected_epoch"),
                     "epochs_run": metrics.get("epochs_run"), "one_answer_share": one_answer_share(predictions),
                     "loop_one_answer_share": one_answer_share(predictions, "loop"),
                     **{f"acc_{family}": per_family.get(family, float("nan")) for family in ("attribute", "path", "loop")},
                     "twin_loop": metrics.get("twin", {}).get("loop", float("nan")),
                     "closed": metrics.get("closed", {}).get("score", float("nan")),
                     "texts_cut": metrics.get("texts_cut", float("nan")),  # recorded since the 1024-token jobs
                     "minutes_per_epoch": metrics.get("minutes_per_epoch")})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shard", default="0/1", help="i/n: run the jobs whose index is i modulo n")
    parser.add_argument("--jobs", help="comma-separated job indices (--list) to run in this order")
    parser.add_argument("--list", action="store_true", help="list the jobs and whether each is done, then stop")
    parser.add_argument("--park", action="store_true", help="park unfinished runs (commit them), then stop")
    args = parser.parse_args(argv)
    if args.park:
        for folder, (epoch, step) in parked_runs.park(runs_dir(), parked_dir()):
            print(f"parked {folder} at epoch {epoch}, step {step}")
        return
    todo = jobs()
    if args.list:
        for i, job in enumerate(todo):
            done = is_done(job)
            where = DROPPED.get(i, "") if i in DROPPED or done else progress_line(job)
            state = "done" if done else "left out" if i in DROPPED else "todo"
            print(f"{i:2d}  {state:8s}  {job.name} on {job.dataset}, seed {job.seed}" + (f"  ({where})" if where else ""))
        for dataset in sorted({job.dataset for job in todo}):
            pick = chosen(dataset)
            print(f"chosen on {dataset}: " + (pick.name if pick else "not yet (a job is unfinished)"))
        print(search_table().to_string(index=False))
        return
    which = f"--jobs {args.jobs}" if args.jobs else f"--shard {args.shard}"
    os.environ.setdefault(COMMAND_ENV, f"python -m toporag_lib.study.recipe_search {which}")
    torch.set_num_threads(1)
    for folder, (epoch, step) in parked_runs.unpark(runs_dir(), ledger_dir(), parked_dir()):
        print(f"resuming {folder.name} from its parked checkpoint (epoch {epoch}, step {step})", flush=True)
    for i in selected(len(todo), args.shard, args.jobs):
        job = todo[i]
        if is_done(job) or (i in DROPPED and not args.jobs):  # a dropped job runs only when named
            continue
        lock = claim(job, runs_dir())
        if lock is None:
            print(f"job {i}: {job.name} runs in another process: skipped", flush=True)
            continue
        print(f"job {i}: {job.name} on {job.dataset}, seed {job.seed}", flush=True)
        try:
            run_validation(job.config(), job.name, runs_dir(), ledger_dir())
            for parked in parked_dir().glob(f"{job.dataset}/{config_digest(job.config())}"):
                parked_runs.release(parked)
        finally:
            lock.release()


if __name__ == "__main__":
    main()
