"""Training and evaluation of TopoRAG and its baselines from one config, whatever the model (`generation.build_model`).

AdamW with linear warm-up and cosine decay (or a constant rate), gradient clipping, early stopping on validation loss
(G-Retriever's rule) or on the validation score (`select_by`). Checkpoints hold the trainable weights only (plus
optimizer, scheduler and random states) and are written atomically after every `checkpoint_every` steps: a run
killed mid-epoch resumes where it stopped and ends with the same weights as an uninterrupted one. Each run writes,
in its output folder: `config.json`, `history.csv` (loss per step, validation loss and score per epoch),
`predictions_<split>.jsonl`, `metrics_<split>.json`. The command line (`python -m toporag_lib.training`) also
records the run in the results ledger (`training.ledger`).

Nothing damaged or empty passes: the model folders are checked before the dataset is prepared, an empty training
or test split is refused, a non-finite loss stops the run with its step, and a checkpoint or `best.pt` that fails
its checksum is refused by path (`atomic.torch_load`). Checkpoints keep the CUDA random states too, and the config
they were made under: every resume checks it against the run's (`check_resumable`).

A run folder has one writer: the `Trainer` holds it (`run_folder.claim_run_folder`) from its construction, before
anything is read or prepared, until `close()` (`with Trainer(...)`, or `run`), and refuses a folder another process
holds (`RunFolderInUseError`, naming it) or a folder of other files (`NotARunFolderError`, leaving it untouched).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import (
    get_constant_schedule_with_warmup,
    get_cosine_schedule_with_warmup,
)

from toporag_lib import atomic
from toporag_lib.data.dataset import QADataset
from toporag_lib.data.registry import load_dataset
from toporag_lib.embed import TextEncoder, check_encoder_dir
from toporag_lib.generation.factory import build_model
from toporag_lib.generation.inputs import Example, collate
from toporag_lib.generation.llm import check_model_dir
from toporag_lib.retrieval.retriever import make_retriever
from toporag_lib.seeding import seed_everything
from toporag_lib.training import data_parallel
from toporag_lib.training.evaluation import (
    predict,
    selection_criterion,
    split_metrics,
    validation_loss,
    validation_score,
)
from toporag_lib.training.examples import build_examples, texts_cut
from toporag_lib.training.history import training_metrics, write_history
from toporag_lib.training.ledger import EXECUTION_KEYS, with_later_keys
from toporag_lib.training.preprocess import prepare
from toporag_lib.training.run_files import BEST, CONFIG, read_config, write_split_results
from toporag_lib.training.run_folder import claim_run_folder
from toporag_lib.training.sharded import sharded_examples
from toporag_lib.training.train_config import TrainConfig

def limited(indices: list[int], limit: int | None, seed: int, pairs: dict[int, str] | None = None) -> list[int]:
    """A seeded random subset of `indices` of size `limit` (all of them when None), in the original order. Where
    questions come as counterfactual twins (`pairs`: index -> pair id, for the indices that have one), twins are
    kept or dropped together: whole pairs and single questions are drawn until the next would pass `limit`."""
    if limit is None or limit >= len(indices):
        return list(indices)
    pairs = {i: p for i, p in (pairs or {}).items() if p}
    if not any(i in pairs for i in indices):
        chosen = np.random.default_rng(seed).choice(len(indices), size=limit, replace=False)
        return [indices[i] for i in sorted(chosen)]
    units: dict[str, list[int]] = {}
    for i in indices:
        units.setdefault(pairs.get(i, f"single {i}"), []).append(i)
    groups, kept = list(units.values()), set()
    for k in np.random.default_rng(seed).permutation(len(groups)):
        if len(kept) + len(groups[k]) <= limit:
            kept.update(groups[k])
    return [i for i in indices if i in kept]


def run_questions(config: TrainConfig, dataset: QADataset) -> tuple[dict[str, list[int]], list[int]]:
    """The questions a run of `config` reads from `dataset` (loaded with its `dataset_options`): per split, the
    dataset indices its `limits` keep (`limited`, seeded by `config.seed`), and all of them in order. An example's
    `index` (and so a prediction's) is its position in that list."""
    pairs = {i: s.meta["pair"] for i, s in enumerate(dataset) if s.meta.get("pair")}
    splits = {name: limited(dataset.split[name], getattr(config.limits, name), config.seed, pairs)
              for name in dataset.split}
    return splits, sorted({i for ids in splits.values() for i in ids})


def make_examples(config: TrainConfig, progress: bool = True,
                  shards: str | Path | None = None) -> tuple[dict[str, list[Example]], int]:
    """Examples per split, and the feature width the encoder takes: made here (`preprocess.prepare`, then
    `examples.build_examples`), or with `config.preprocess` naming Dask, by `sharded.preprocess_sharded` into the
    folder `shards` (resumable; the same examples)."""
    dataset = load_dataset(config.dataset, **config.dataset_options)
    splits, keep = run_questions(config, dataset)
    position = {old: new for new, old in enumerate(keep)}
    if config.preprocess != "local":
        if shards is None:
            raise ValueError(f"preprocess={config.preprocess!r} writes shards: pass the folder for them")
        made, dim = sharded_examples(config, keep, Path(shards), progress)
        return {name: [made[position[i]] for i in ids] for name, ids in splits.items()}, dim
    encoder = TextEncoder(config.encoder_path, batching=config.embedding_batching, progress=progress)
    prepared = prepare(dataset.take(keep), encoder, progress=progress, edge_text=config.edge_text, lift=config.lift)
    # a fitted retrieval is fitted on the training questions only
    retriever = make_retriever(config.retrieval, prepared.questions([position[i] for i in splits["train"]]))
    examples = {name: build_examples(prepared, [position[i] for i in ids], retriever, config.graph_text,
                                     config.question_suffix, progress=progress)
                for name, ids in splits.items()}
    return examples, prepared.queries.shape[1]


def make_optimizer(groups: list[dict], config: TrainConfig, total_steps: int):
    """AdamW over `groups` and its learning-rate schedule (linear warm-up, then cosine or constant)."""
    optimizer = torch.optim.AdamW(groups, betas=tuple(config.adam_betas))
    warmup = int(config.warmup_ratio * total_steps)
    if config.schedule == "cosine":
        return optimizer, get_cosine_schedule_with_warmup(optimizer, warmup, total_steps)
    return optimizer, get_constant_schedule_with_warmup(optimizer, warmup)


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, global_batch: list[Example],
               config: TrainConfig) -> torch.Tensor:
    """Loss, backward, gradient clipping and an optimizer step on `global_batch` (under torchrun this process takes
    its share and gradients are summed across processes); the batch's mean answer-token loss."""
    params = [p for g in optimizer.param_groups for p in g["params"]]
    optimizer.zero_grad(set_to_none=True)
    mine = data_parallel.local_slice(global_batch)
    total, count = (model.loss_terms(collate(mine), config.max_txt_len) if mine
                    else (torch.zeros((), requires_grad=True), torch.zeros(())))
    tokens = data_parallel.sum_across(count.detach().clone())
    (total / tokens).backward()
    data_parallel.sum_gradients(params)
    torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
    optimizer.step()
    return data_parallel.sum_across(total.detach().clone()) / tokens


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    return np.random.default_rng([seed, epoch]).permutation(n).tolist()


def check_resumable(saved: dict[str, Any], current: dict[str, Any], folder: Path) -> None:
    """Refuse to resume a checkpoint made under another config. Only `epochs` may grow, and only under a constant
    rate without warm-up, where the steps already taken had the rate an uninterrupted longer run gives them."""
    saved = TrainConfig.from_dict(with_later_keys(saved)).to_dict()  # keys added since: the value the code then had
    changed = sorted(key for key in saved.keys() | current.keys()
                     if saved.get(key) != current.get(key) and key not in EXECUTION_KEYS)
    if not changed:
        return
    if changed != ["epochs"]:
        raise ValueError(f"{folder} holds a checkpoint of a run with a different config ({', '.join(changed)}): "
                         "use another output folder, or delete its checkpoint.pt to start over")
    if current["epochs"] < saved["epochs"] or current["schedule"] != "constant" or current["warmup_ratio"] != 0:
        raise ValueError(f"{folder}: going from {saved['epochs']} to {current['epochs']} epochs would change the "
                         "learning rate of steps already taken; only a run with a constant rate and no warm-up can be "
                         "extended")


def check_inputs_exist(config: TrainConfig) -> None:
    """The device the config names is there, and the LLM and sentence-encoder folders it names are what they should
    be (named errors, no loading)."""
    if config.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"TrainConfig.device={config.device!r}: torch sees no CUDA device on this machine; run it "
                         "where there is one, or with device 'cpu' (--set device=cpu)")
    if config.llm_path is not None:
        check_model_dir(Path(config.llm_path))
    if config.encoder_path is not None:
        check_encoder_dir(Path(config.encoder_path))


def check_enough_examples(examples: dict[str, list[Example]], config: TrainConfig) -> None:
    """A run needs test questions, and training questions when it trains: refuse an empty split by name."""
    needed = ("train", "test") if config.train else ("test",)
    empty = [split for split in needed if not examples[split]]
    if empty:
        raise ValueError(f"dataset {config.dataset!r} has no {' and no '.join(empty)} questions left under "
                         f"limits={config.limits} (were they all dropped?): nothing to learn or score")


class Trainer:
    """One run: build, train with checkpoints and early stopping, evaluate the best weights on test."""

    def __init__(self, config: TrainConfig, out_dir: str | Path, progress: bool = True):
        self.config, self.out = config, Path(out_dir)
        self.device = data_parallel.init_from_env(config.device)
        self.main = data_parallel.is_main()
        self.progress = progress and self.main
        # the folder's one writer from here to `close()` (process 0 writes for all), before anything is read or made
        self.lock = claim_run_folder(self.out) if self.main else None
        try:
            self._start(config)
        except BaseException:
            self.close()
            raise

    def _start(self, config: TrainConfig) -> None:
        self.folder_config = read_config(self.out) if (self.out / CONFIG).exists() else None  # the run found there
        if self.checkpoint_path.exists():
            self.check_resumable(self.folder_config)
            self.check_selected_weights()
        if self.main:
            self.out.mkdir(parents=True, exist_ok=True)
            atomic.remove_stale_temporaries(self.out)  # left by checkpoint writes of a killed run
            atomic.write_text(self.out / CONFIG, json.dumps(config.to_dict(), indent=1))
        check_inputs_exist(config)  # before the dataset is embedded, lifted and retrieved
        seed_everything(config.seed)
        self.examples, in_dim = make_examples(config, self.progress, self.out / "shards")
        check_enough_examples(self.examples, config)
        self.model = build_model(config.engine, config.model, in_dim, llm_path=config.llm_path,
                                 llm_dtype=config.llm_dtype, device=self.device, seed=config.seed)
        self.texts_cut = texts_cut(self.examples, self.model.n_tokens, config.max_txt_len)
        if self.progress and any(self.texts_cut.values()):
            shares = ", ".join(f"{split} {share:.0%}" for split, share in self.texts_cut.items())
            print(f"graph texts cut at max_txt_len={config.max_txt_len} tokens: {shares}", flush=True)
        self.steps_per_epoch = math.ceil(len(self.examples["train"]) / config.batch_size)
        groups = self.model.parameter_groups(config.lr, config.lora_lr, config.weight_decay)
        self.optimizer, self.scheduler = (make_optimizer(groups, config, self.steps_per_epoch * config.epochs)
                                          if groups else (None, None))
        self.state = {"epoch": 0, "step": 0, "best_val": math.inf, "best_epoch": None, "bad_epochs": 0,
                      "history": [], "done": False}

    def close(self) -> None:
        """Let go of the run folder (another run may write it from now on)."""
        if getattr(self, "lock", None) is not None:
            self.lock.release()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def checkpoint_path(self) -> Path:
        return self.out / "checkpoint.pt"

    def check_resumable(self, saved: dict[str, Any] | None) -> None:
        """Refuse a checkpoint of a run under another config (`check_resumable`), or of a run with none."""
        if saved is None:
            raise ValueError(f"{self.checkpoint_path} belongs to no config (the folder had no {CONFIG}): it cannot "
                             "be checked against this run's; delete it to start over, or use another output folder")
        check_resumable(saved, self.config.to_dict(), self.out)

    def check_selected_weights(self) -> None:
        """Refuse a checkpoint whose selected epoch's weights (`best.pt`) are missing, before any work: the run would
        end by evaluating other weights than the epoch it names (a checkpoint carried without its `best.pt`)."""
        try:
            state = atomic.torch_load(self.checkpoint_path, weights_only=True)["state"]
        except atomic.DamagedFileError as err:
            raise atomic.DamagedFileError(f"{err}: delete it to restart this run from its beginning") from err
        if state.get("best_epoch") is not None and not (self.out / BEST).exists():
            raise FileNotFoundError(f"{self.out / BEST} is missing, but {self.checkpoint_path} selected epoch "
                                    f"{state['best_epoch'] + 1}: its weights are gone, so the run cannot end by "
                                    f"evaluating them; restore {BEST} beside the checkpoint, or delete the folder "
                                    "to start over")

    def save_checkpoint(self) -> None:
        if not self.main:
            return
        cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
        atomic.torch_save({"model": self.model.trainable_state(), "optimizer": self.optimizer.state_dict(),
                           "scheduler": self.scheduler.state_dict(), "state": self.state,
                           "rng": torch.get_rng_state(), "cuda_rng": cuda_rng, "config": self.config.to_dict()},
                          self.checkpoint_path)

    def resume(self) -> bool:
        """Load the last checkpoint if there is one; True when it did."""
        if not self.checkpoint_path.exists():
            return False
        try:
            saved = atomic.torch_load(self.checkpoint_path, weights_only=True)  # tensors and plain values only
        except atomic.DamagedFileError as err:
            raise atomic.DamagedFileError(f"{err}: delete it to restart this run from its beginning") from err
        # the config it was made under (older checkpoints: the folder's, as this trainer found it)
        self.check_resumable(saved.get("config", self.folder_config))
        self.model.load_trainable_state(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        self.state = saved["state"]
        torch.set_rng_state(saved["rng"])
        if saved.get("cuda_rng") and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(saved["cuda_rng"])
        stopped_early = self.state["bad_epochs"] >= self.config.patience
        if self.state["done"] and not stopped_early and self.state["epoch"] < self.config.epochs:
            self.state["done"] = False  # a finished run given more epochs (check_resumable allowed it)
        return True

    def train(self, stop_after_steps: int | None = None) -> None:
        """Train until done (or for `stop_after_steps` steps, leaving a checkpoint: a simulated kill)."""
        config = self.config
        if not config.train or self.optimizer is None or self.state["done"]:
            return
        taken = 0
        while self.state["epoch"] < config.epochs:
            epoch = self.state["epoch"]
            order = epoch_order(len(self.examples["train"]), config.seed, epoch)
            bar = tqdm(total=self.steps_per_epoch, initial=self.state["step"], desc=f"epoch {epoch + 1}",
                       unit="step", disable=not self.progress)
            self.model.train()
            while self.state["step"] < self.steps_per_epoch:
                step = self.state["step"]
                start = time.perf_counter()
                loss = self.step(order[step * config.batch_size:(step + 1) * config.batch_size])
                seconds = time.perf_counter() - start
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"{self.out}: the training loss is {loss.item()} at epoch {epoch + 1}, "
                                             f"step {step + 1}: the run stops (check the embeddings and lr={config.lr})")
                self.state["history"].append({"epoch": epoch, "step": step, "loss": loss.item(),
                                              "seconds": seconds, "val_loss": None, "val_score": None})
                self.state["step"] += 1
                taken += 1
                bar.set_postfix(loss=f"{loss.item():.3f}", s_per_step=f"{seconds:.2f}")
                bar.update(1)
                if self.state["step"] % config.checkpoint_every == 0 or (stop_after_steps and taken >= stop_after_steps):
                    self.save_checkpoint()
                if stop_after_steps and taken >= stop_after_steps:
                    bar.close()
                    return
            bar.close()
            self.end_epoch()
            if self.state["done"]:
                break
        self.state["done"] = True
        self.save_checkpoint()

    def step(self, global_batch: list[int]) -> torch.Tensor:
        """One optimizer and scheduler step on the training questions `global_batch`; its mean loss."""
        loss = train_step(self.model, self.optimizer, [self.examples["train"][i] for i in global_batch], self.config)
        self.scheduler.step()
        return loss

    def end_epoch(self) -> None:
        """Validate; keep the weights when the selection criterion improved; stop after `patience` bad epochs."""
        val_examples = self.examples["val"]
        val = validation_loss(self.model, val_examples, self.config, self.progress) if val_examples else 0.0
        score, by_family = (validation_score(self.model, val_examples, self.config, self.progress)
                            if val_examples and self.config.select_by == "val_score" else (None, {}))
        self.state["history"].append({"epoch": self.state["epoch"], "step": None, "loss": None, "seconds": None,
                                      "val_loss": val, "val_score": score, "val_by_family": by_family})
        criterion = selection_criterion(val, score)
        if criterion < self.state["best_val"]:
            self.state["best_val"], self.state["best_epoch"], self.state["bad_epochs"] = \
                criterion, self.state["epoch"], 0
            if self.main:
                atomic.torch_save(self.model.trainable_state(), self.out / BEST)
        else:
            self.state["bad_epochs"] += 1
            self.state["done"] = self.state["bad_epochs"] >= self.config.patience
        self.state["epoch"] += 1
        self.state["step"] = 0
        self.save_checkpoint()

    def evaluate(self, split: str = "test") -> dict[str, Any]:
        """Generate on `split` with the best weights; write predictions and metrics (process 0 only; the others
        return {})."""
        data_parallel.barrier()
        if not self.main:
            return {}
        if (self.out / BEST).exists():
            self.model.load_trainable_state(atomic.torch_load(self.out / BEST, weights_only=True))
        records = predict(self.model, self.examples[split], self.config, self.progress)
        metrics = {**split_metrics(self.config.dataset, split, records),
                   **training_metrics(self.state["history"], self.state.get("best_epoch"), self.config.select_by,
                                      self.state["epoch"], self.steps_per_epoch)}
        if split in self.texts_cut:
            metrics["texts_cut"] = self.texts_cut[split]
        write_split_results(self.out, split, records, metrics)
        write_history(self.out, self.state["history"])
        return metrics


def run_to_end(trainer: Trainer) -> dict[str, Any]:
    """Train (resuming if a checkpoint is there) and evaluate on test."""
    if trainer.optimizer is not None:
        trainer.resume()
    trainer.train()
    return trainer.evaluate("test")


def run(config: TrainConfig, out_dir: str | Path, progress: bool = True) -> dict[str, Any]:
    """Train (resuming if a checkpoint is there) and evaluate on test, holding the run folder throughout."""
    with Trainer(config, out_dir, progress) as trainer:
        return run_to_end(trainer)
