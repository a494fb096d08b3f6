"""PyTorch Geometric's own `GRetriever` (2.8.1) trained and evaluated on our examples: an outside reference for the
"G-Retriever" preset (`TrainConfig(engine="pyg")`, presets "G-Retriever (PyG)" and "G-Retriever (PyG) + LoRA").

Same as `train.Trainer`: the `Example`s of `train.make_examples(config)` (questions, retrieved subgraph, its text,
labels), AdamW with the graph side at `lr` and LoRA adapters at `lora_lr`, weight decay, betas, linear warm-up and
the schedule (`train.make_optimizer`), gradient clipping at `max_grad_norm`, the same epoch orders and seed,
early stopping and the kept epoch by `select_by` (validation loss or score), `max_new_tokens`, and the output
files (`config.json`, `history.csv`, `predictions_test.jsonl`, `metrics_test.json`). The graph text is cut to
`max_txt_len` LLM tokens here, because PyG's chat-template path does not cut it (its `MAX_TXT_LEN` applies to the
Llama-2 layout only).

PyG's own: the GNN is `torch_geometric.nn.models.GAT` (4 heads, out = hidden, as PyG's `examples/llm/g_retriever.py`)
on x0, `node_adj_index` (both directions of every edge, as our GNN baselines) and x1 of each edge as edge_attr
(`edge_dim` set: PyG's example leaves it unset, and GATConv then drops edge_attr without a word); node mean;
projector Linear(h, h), Sigmoid, Linear(h, tokens x H) (`model.projector_hidden` is not used); the loss is Hugging
Face's token mean over the batch, with positions 0..T-1 regardless of left padding; LoRA is fixed at r 8, alpha 16,
dropout 0.05 on q_proj and v_proj (other values are refused). Validation loss is each batch's mean weighted by its
size (equal to our per-question mean when the answers have the same token count, as ExplaGraphs' do).

DESIGN.md's traps, fixed here: with use_lora=False PyG leaves the LLM trainable (we freeze it); with LoRA, peft's
`prepare_model_for_kbit_training` turns the whole LLM to fp32 (we cast the frozen base back to `llm_dtype`; the
adapters stay fp32); without a `sys_prompt` its `LLM` uses Llama-2 `[INST]` strings (we pass `SYS_PROMPT`). With
it, PyG renders [system, user] with the model's chat template, cuts the BOS text off the front and prepends the
BOS embedding and the soft tokens; for ChatML (SmolLM2) the sequence is

    <|im_start|>[soft tokens]system\\n{SYS_PROMPT}<|im_end|>\\n<|im_start|>user\\n{graph text} -  - {question}
    <|im_end|>\\n<|im_start|>assistant\\n{answer}<|im_end|>                      <- answer: training only

(the soft tokens sit inside the system turn's header). The LLM folder is `llm_path` or the bundled SmolLM2; PyG's
hub look-up is skipped by passing `num_params` (CPU: infinity, so its GPU-memory heuristic never picks a GPU) or
`n_gpus=1` (device "cuda").

Simpler than `Trainer`: no checkpoints and no resume (an interrupted run starts over), no data parallelism; the
best epoch's trainable weights are kept in memory.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from torch_geometric.llm.models import LLM, GRetriever
from torch_geometric.nn.models import GAT
from tqdm.auto import tqdm

from toporag_lib import atomic, evaluate
from toporag_lib.examples import Example, ExampleBatch, collate
from toporag_lib.llm import bundled_model_dir, check_model_dir
from toporag_lib.train import (DTYPES, HISTORY_COLUMNS, TrainConfig, batches, epoch_order, make_examples,
                               make_optimizer, seed_everything, selected_epoch_metrics, selection_criterion)

GAT_HEADS = 4  # PyG's examples/llm/g_retriever.py
PYG_LORA = {"lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.05}  # fixed inside GRetriever
SYS_PROMPT = "You are a helpful assistant."


def check_config(config: TrainConfig) -> None:
    """Refuse settings PyG's GRetriever cannot honour."""
    model = config.model
    if model.encoder != "gat" or model.virtual_tokens:
        raise ValueError("engine 'pyg' runs PyG's GAT: model.encoder must be 'gat' and model.virtual_tokens 0")
    if model.lora and {key: getattr(model, key) for key in PYG_LORA} != PYG_LORA:
        raise ValueError(f"PyG's GRetriever fixes LoRA at {PYG_LORA}")
    if config.device not in ("cpu", "cuda"):
        raise ValueError(f"engine 'pyg' takes device 'cpu' or 'cuda', not {config.device!r}")


def load_pyg_llm(config: TrainConfig) -> LLM:
    """PyG's `LLM` on the local folder, with a system prompt (so the chat template is used), never the hub."""
    folder = Path(config.llm_path) if config.llm_path else bundled_model_dir()
    check_model_dir(folder)
    placement = {"n_gpus": 1} if config.device == "cuda" else {"num_params": math.inf}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="LLM is being used on CPU")
        return LLM(str(folder), dtype=DTYPES[config.llm_dtype], sys_prompt=SYS_PROMPT, **placement)


def build_model(config: TrainConfig, in_dim: int) -> GRetriever:
    """GAT + PyG's GRetriever, with the LLM frozen (or LoRA over a base kept in `llm_dtype`)."""
    llm = load_pyg_llm(config)
    llm.llm.requires_grad_(False)
    model = config.model
    gnn = GAT(in_channels=in_dim, hidden_channels=model.hidden_dim, out_channels=model.hidden_dim,
              num_layers=model.num_layers, heads=GAT_HEADS, dropout=model.dropout, edge_dim=in_dim)
    retriever = GRetriever(llm, gnn, use_lora=model.lora, mlp_out_tokens=model.num_soft_tokens)
    for param in retriever.llm_generator.parameters():
        if not param.requires_grad:
            param.data = param.data.to(DTYPES[config.llm_dtype])
    return retriever


def truncated(examples: list[Example], tokenizer: Any, max_txt_len: int) -> list[Example]:
    """The examples with each graph text cut to its first `max_txt_len` tokens."""
    ids = tokenizer([e.text for e in examples], add_special_tokens=False).input_ids if examples else []
    return [e if len(i) <= max_txt_len else replace(e, text=tokenizer.decode(i[:max_txt_len]))
            for e, i in zip(examples, ids)]


def model_inputs(batch: ExampleBatch) -> dict[str, Any]:
    """GRetriever's keyword arguments (labels aside) for a batch of examples."""
    graphs = batch.graphs
    edge_index, edge_id = graphs.node_adj_index[:2], graphs.node_adj_index[2]
    return {"question": batch.questions, "additional_text_context": batch.texts, "x": graphs.x0,
            "edge_index": edge_index, "edge_attr": graphs.x1[edge_id], "batch": graphs.batch}


def parameter_groups(model: GRetriever, config: TrainConfig) -> list[dict]:
    """AdamW groups: GNN and projector at `lr`, LoRA adapters at `lora_lr`."""
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    graph_side = [p for name, p in trainable if "lora_" not in name]
    adapters = [p for name, p in trainable if "lora_" in name]
    groups = [{"params": graph_side, "lr": config.lr, "weight_decay": config.weight_decay}]
    if adapters:
        groups.append({"params": adapters, "lr": config.lora_lr, "weight_decay": config.weight_decay})
    return groups


def trainable_state(model: torch.nn.Module) -> dict[str, Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}


class PygReference:
    """One run of PyG's GRetriever: build, train with early stopping, evaluate the best weights."""

    def __init__(self, config: TrainConfig, out_dir: str | Path, progress: bool = True):
        check_config(config)
        self.config, self.out, self.progress = config, Path(out_dir), progress
        self.out.mkdir(parents=True, exist_ok=True)
        atomic.write_text(self.out / "config.json", json.dumps(config.to_dict(), indent=1))
        seed_everything(config.seed)
        examples, in_dim = make_examples(config, progress)
        seed_everything(config.seed)
        self.model = build_model(config, in_dim)
        tokenizer = self.model.llm.tokenizer
        self.examples = {split: truncated(exs, tokenizer, config.max_txt_len) for split, exs in examples.items()}
        self.steps_per_epoch = math.ceil(len(self.examples["train"]) / config.batch_size)
        self.optimizer, self.scheduler = make_optimizer(parameter_groups(self.model, config), config,
                                                        self.steps_per_epoch * config.epochs)
        self.history: list[dict] = []
        self.best_val, self.best_epoch, self.best_state, self.epochs_run = math.inf, None, None, 0

    def train(self) -> None:
        """Train for `epochs`, stopping after `patience` epochs without a better validation loss (or score)."""
        if not self.config.train:
            return
        bad_epochs = 0
        for epoch in range(self.config.epochs):
            self.train_epoch(epoch)
            val = self.validation_loss() if self.examples["val"] else 0.0
            score = self.validation_score() if self.examples["val"] and self.config.select_by == "val_score" else None
            self.history.append({"epoch": epoch, "step": None, "loss": None, "seconds": None, "val_loss": val,
                                 "val_score": score})
            self.epochs_run = epoch + 1
            criterion = selection_criterion(val, score)
            if criterion < self.best_val:
                self.best_val, self.best_epoch, self.best_state, bad_epochs = \
                    criterion, epoch, trainable_state(self.model), 0
            else:
                bad_epochs += 1
                if bad_epochs >= self.config.patience:
                    break

    def train_epoch(self, epoch: int) -> None:
        config, train = self.config, self.examples["train"]
        order = epoch_order(len(train), config.seed, epoch)
        self.model.train()
        bar = tqdm(total=self.steps_per_epoch, desc=f"epoch {epoch + 1} (PyG)", unit="step",
                   disable=not self.progress)
        for step in range(self.steps_per_epoch):
            chosen = order[step * config.batch_size:(step + 1) * config.batch_size]
            start = time.perf_counter()
            loss = self.step(collate([train[i] for i in chosen]))
            seconds = time.perf_counter() - start
            self.history.append({"epoch": epoch, "step": step, "loss": loss, "seconds": seconds, "val_loss": None,
                                 "val_score": None})
            bar.set_postfix(loss=f"{loss:.3f}", s_per_step=f"{seconds:.2f}")
            bar.update(1)
        bar.close()

    def step(self, batch: ExampleBatch) -> float:
        """One optimizer step; the batch's loss."""
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.model(label=batch.labels, **model_inputs(batch))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        return loss.item()

    @torch.no_grad()
    def validation_loss(self) -> float:
        """Mean over validation batches of PyG's loss, weighted by batch size."""
        self.model.eval()
        examples, size = self.examples["val"], self.config.eval_batch_size
        bar = tqdm(batches(examples, size), total=-(-len(examples) // size), desc="validation loss (PyG)",
                   unit="batch", disable=not self.progress)
        total = sum(float(self.model(label=b.labels, **model_inputs(b))) * len(b) for b in bar)
        return total / len(examples)

    def validation_score(self) -> float:
        records = self.predict("val")
        return evaluate.metric_for(self.config.dataset)([r["pred"] for r in records], [r["label"] for r in records])

    @torch.no_grad()
    def predict(self, split: str) -> list[dict]:
        self.model.eval()
        examples, size, records = self.examples[split], self.config.eval_batch_size, []
        for start in tqdm(range(0, len(examples), size), desc="generating (PyG)", disable=not self.progress):
            chunk = examples[start:start + size]
            outputs = self.model.inference(max_out_tokens=self.config.max_new_tokens, **model_inputs(collate(chunk)))
            records += [{"index": e.index, "question": e.question, "label": e.label, "pred": output.strip(),
                         "family": e.family} for e, output in zip(chunk, outputs)]
        return records

    def evaluate(self, split: str = "test") -> dict[str, Any]:
        """Generate on `split` with the best weights; write predictions, metrics and history as `Trainer` does."""
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state, strict=False)
        records = self.predict(split)
        evaluate.write_predictions(self.out / f"predictions_{split}.jsonl", records)
        metrics = self.metrics(records, split)
        atomic.write_text(self.out / f"metrics_{split}.json", json.dumps(metrics, indent=1))
        pd.DataFrame(self.history, columns=HISTORY_COLUMNS).to_csv(self.out / "history.csv", index=False)
        return metrics

    def metrics(self, records: list[dict], split: str) -> dict[str, Any]:
        """The keys of `Trainer.evaluate`'s metrics."""
        dataset = self.config.dataset
        preds, labels = [r["pred"] for r in records], [r["label"] for r in records]
        metrics = {"dataset": dataset, "split": split, "n": len(records),
                   "score": evaluate.metric_for(dataset)(preds, labels) if records else float("nan")}
        families = [r["family"] for r in records]
        if any(families):
            metrics["per_family"] = evaluate.per_family_accuracy(preds, labels, families, dataset)
        steps = [h["seconds"] for h in self.history if h["step"] is not None]
        if steps:
            metrics["seconds_per_step"] = float(np.median(steps))
            metrics["minutes_per_epoch"] = metrics["seconds_per_step"] * self.steps_per_epoch / 60
        metrics["epochs_run"] = self.epochs_run
        metrics.update(selected_epoch_metrics(self.history, self.best_epoch, self.config.select_by))
        return metrics


def run(config: TrainConfig, out_dir: str | Path, progress: bool = True) -> dict[str, Any]:
    """Train PyG's GRetriever on `config`'s examples and evaluate it on test (`train.run` for engine "pyg")."""
    reference = PygReference(config, out_dir, progress)
    reference.train()
    return reference.evaluate("test")
