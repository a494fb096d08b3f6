"""Answers and scores: greedy generation, the validation loss and score that select an epoch, and a split's metrics
(the dataset's metric, its secondary metrics and accuracy per question family)."""

from __future__ import annotations

from typing import Any

import torch
from tqdm.auto import tqdm

from toporag_lib.data.metrics import per_family_accuracy, per_family_twin_accuracy
from toporag_lib.data.registry import correct_for, dataset_spec, metric_for
from toporag_lib.generation.inputs import Example, collate
from toporag_lib.training import data_parallel
from toporag_lib.training.train_config import TrainConfig


def batches(examples: list[Example], size: int):
    for start in range(0, len(examples), size):
        yield collate(examples[start:start + size])


@torch.no_grad()
def validation_loss(model: torch.nn.Module, examples: list[Example], config: TrainConfig,
                    progress: bool = False) -> float:
    """Mean over questions of each answer's mean token loss (each process takes its share, then they add up)."""
    model.eval()
    total, count = 0.0, 0
    local = data_parallel.local_slice(examples)
    bar = tqdm(total=len(local), desc="validation loss", unit="question", disable=not progress)
    for batch in batches(local, config.eval_batch_size):
        losses = model.loss(batch, config.max_txt_len, reduction="none")
        total += float(losses.sum())
        count += len(batch)
        bar.update(len(batch))
    bar.close()
    summed = data_parallel.sum_across(torch.tensor([total, count], dtype=torch.float64))
    return float(summed[0] / summed[1].clamp(min=1))


def validation_score(model: torch.nn.Module, examples: list[Example], config: TrainConfig,
                     progress: bool = False) -> tuple[float, dict[str, dict[str, float]]]:
    """The dataset's metric on `examples` from greedy answers, and per question family ("all" where questions have
    none) its accuracy and, where answers come from a closed vocabulary, `one_answer`: the share of the family's
    questions given its most common candidate answer (1.0: one answer to all of them, a collapse). Each process
    takes its share, then they add up (every metric is a mean over questions)."""
    records = predict(model, data_parallel.local_slice(examples), config, progress, desc="validation answers",
                      closed=False)
    spec, correct = dataset_spec(config.dataset), correct_for(config.dataset)  # the metric is the mean of `correct`
    families = list(dict.fromkeys(e.family for e in examples))  # the same order in every process
    counts = torch.zeros(len(families), 2 + max(len(spec.choices_for(f)) for f in families), dtype=torch.float64)
    for r in records:  # per family: right answers, questions, then each candidate answer's count
        choices = spec.choices_for(r["family"])
        counts[families.index(r["family"]), :2 + len(choices)] += torch.tensor(
            [correct(r["pred"], r["label"]), 1, *(correct(r["pred"], choice) for choice in choices)],
            dtype=torch.float64)
    counts = data_parallel.sum_across(counts)
    by_family = {(family or "all"): {"accuracy": float(row[0] / row[1].clamp(min=1)),
                                     **({"one_answer": float(row[2:].max() / row[1].clamp(min=1))}
                                        if spec.choices_for(family) else {})}
                 for family, row in zip(families, counts)}
    return float(counts[:, 0].sum() / counts[:, 1].sum().clamp(min=1)), by_family


def selection_criterion(val_loss: float, val_score: float | None) -> float:
    """What early stopping minimizes: minus the validation score when there is one, else the validation loss."""
    return val_loss if val_score is None else -val_score


def predict(model: torch.nn.Module, examples: list[Example], config: TrainConfig, progress: bool = True,
            desc: str = "generating", closed: bool = True) -> list[dict]:
    """A record per question: its greedy answer `pred` and, with `closed` on a dataset whose answers come from a
    closed vocabulary (`DatasetSpec.answer_choices`), `choice`: the candidate answer the LLM finds most likely
    (`choice_logprobs`; models without it, PyG's GRetriever, give none)."""
    model.eval()
    spec = dataset_spec(config.dataset)
    choose = closed and bool(spec.answer_choices) and hasattr(model, "choice_logprobs")
    records = []
    bar = tqdm(total=len(examples), desc=desc, unit="question", disable=not progress)
    for start in range(0, len(examples), config.eval_batch_size):
        chunk = examples[start:start + config.eval_batch_size]
        batch = collate(chunk)
        outputs = model.generate(batch, config.max_txt_len, config.max_new_tokens)
        chosen: list[dict[str, str]] = [{} for _ in chunk]
        if choose:
            candidates = [spec.choices_for(e.family) for e in chunk]
            scores = model.choice_logprobs(batch, candidates, config.max_txt_len)
            chosen = [{"choice": c[max(range(len(c)), key=s.__getitem__)]} for c, s in zip(candidates, scores)]
        records += [{"index": e.index, "question": e.question, "label": e.label, "pred": output, "family": e.family,
                     **({"pair": e.pair} if e.pair else {}), **choice}
                    for e, output, choice in zip(chunk, outputs, chosen)]
        bar.update(len(chunk))
    bar.close()
    return records


def split_metrics(dataset: str, split: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A split's metrics from its prediction records: n, the dataset's score, its secondary metrics and, where
    questions have families, accuracy per family, and where they come as counterfactual twins, twin accuracy per
    family (`metrics.twin_accuracy`)."""
    preds, labels = [r["pred"] for r in records], [r["label"] for r in records]
    metric = metric_for(dataset)
    metrics = {"dataset": dataset, "split": split, "n": len(records),
               "score": metric(preds, labels) if records else float("nan")}
    spec = dataset_spec(dataset)
    if records and spec.secondary:
        metrics["secondary"] = {name: score(preds, labels) for name, score in spec.secondary.items()}
    families = [r["family"] for r in records]
    if any(families):
        metrics["per_family"] = per_family_accuracy(preds, labels, families, metric)
    if any("pair" in r for r in records):
        correct = [correct_for(dataset)(p, label) for p, label in zip(preds, labels)]
        metrics["twin"] = per_family_twin_accuracy(correct, [r.get("pair", "") for r in records], families)
    if records and all("choice" in r for r in records):
        metrics["closed"] = closed_answer_metrics(dataset, records)
    return metrics


def closed_answer_metrics(dataset: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The closed-answer score (secondary to the dataset's metric): the dataset's metric on the most likely
    candidate answers (`choice`), per family where questions have families, and twin accuracy by it."""
    choices, labels = [r["choice"] for r in records], [r["label"] for r in records]
    out: dict[str, Any] = {"score": metric_for(dataset)(choices, labels)}
    families = [r["family"] for r in records]
    if any(families):
        out["per_family"] = per_family_accuracy(choices, labels, families, metric_for(dataset))
    if any("pair" in r for r in records):
        right = [correct_for(dataset)(c, label) for c, label in zip(choices, labels)]
        out["twin"] = per_family_twin_accuracy(right, [r.get("pair", "") for r in records], families)
    return out
