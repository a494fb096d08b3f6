"""An LLM-free probe: can a graph encoder read the answer from a (sub)complex, and do 2-cells help it?

Each encoder (`nn.ENCODERS`; the cellular one also without 2-cells) reads the question's subcomplex (the retrieved
one, or the whole graph), every cell's feature x joined by x * z_q so that the encoder knows what is asked, and a
linear head over [pooled state; z_q] scores the answer vocabulary of the question's family (`ANSWERS` of the
testbed; other families' answers are masked). Trained with cross-entropy on the training split for a fixed number
of epochs, evaluated on the test split; one run per seed. No LLM is involved, so it runs in minutes on a CPU.

`paired_effect` compares the cellular encoder with and without 2-cells question by question: each question's
correctness averaged over the seeds, the mean of the differences with its 95% t-interval and the two-sided p of a
paired t-test over questions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy import stats
from torch import Tensor, nn
from torch_geometric.data import Batch
from tqdm.auto import tqdm

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.scene_testbed import ANSWERS
from toporag_lib.embed import TextEncoder, one_torch_thread
from toporag_lib.nn import build_encoder
from toporag_lib.retrieval import retrieve
from toporag_lib.seeding import seed_everything
from toporag_lib.topology.batching import ComplexData
from toporag_lib.training.config import TrainConfig
from toporag_lib.training.preprocess import prepare

VARIANTS = {"cellular": ("cellular", True), "cellular w/o 2-cells": ("cellular", False), "gcn": ("gcn", False),
            "gat": ("gat", False), "gt": ("gt", False)}
INPUTS = ("retrieved", "whole graph")
VOCABULARY = sorted({answer for answers in ANSWERS.values() for answer in answers})


@dataclass
class ProbeData:
    """Per question: its (sub)complex with and without 2-cells, query embedding, answer index and family."""

    with_cells: list[ComplexData]
    without_cells: list[ComplexData]
    queries: Tensor
    labels: Tensor
    families: list[str]
    split: dict[str, list[int]]


def probe_data(dataset: QADataset, encoder: TextEncoder, config: TrainConfig, source: str) -> ProbeData:
    """The questions of `dataset` prepared under `config`'s lifting, edge texts and retrieval (`source`: "retrieved"
    or "whole graph")."""
    if source not in INPUTS:
        raise ValueError(f"source={source!r}: expected one of {INPUTS}")
    prepared = prepare(dataset, encoder, progress=False, edge_text=config.edge_text, **config.lift.to_dict())
    with_cells, without_cells = [], []
    for i in range(len(dataset)):
        cc = prepared.complex_of(i)
        if source == "retrieved":
            sub = retrieve(cc, prepared.queries[i], **config.retrieval.kwargs())
            nodes, edges, cells = sub.nodes, sub.edges, sub.cells2
        else:
            nodes, edges, cells = np.arange(cc.num_cells(0)), np.arange(cc.num_cells(1)), np.arange(cc.num_cells(2))
        with_cells.append(ComplexData.from_complex(cc, nodes, edges, cells))
        without_cells.append(ComplexData.from_complex(cc, nodes, edges, []))
    labels = torch.tensor([VOCABULARY.index(s.label) for s in dataset])
    return ProbeData(with_cells, without_cells, prepared.queries, labels, [s.meta["family"] for s in dataset],
                     dataset.split)


class Probe(nn.Module):
    """A graph encoder on query-conditioned cell features, and a linear head over [pooled; z_q]."""

    def __init__(self, encoder: str, in_dim: int, hidden: int) -> None:
        super().__init__()
        self.encoder = build_encoder(encoder, 2 * in_dim, hidden, hidden, num_layers=2)
        self.head = nn.Linear(hidden + in_dim, len(VOCABULARY))
        self.masks = {f: torch.tensor([a not in ANSWERS[f] for a in VOCABULARY]) for f in ANSWERS}

    def forward(self, batch: Batch, queries: Tensor, families: list[str]) -> Tensor:
        batch = batch.clone()
        for x, index in (("x0", batch.batch), ("x1", batch.batch_1), ("x2", batch.batch_2)):
            features = getattr(batch, x)
            setattr(batch, x, torch.cat([features, features * queries[index]], dim=-1))
        logits = self.head(torch.cat([self.encoder(batch), queries], dim=-1))
        mask = torch.stack([self.masks[f] for f in families])
        return logits.masked_fill(mask, float("-inf"))


def train_probe(data: ProbeData, variant: str, seed: int, epochs: int = 15, batch_size: int = 64,
                hidden: int = 64, lr: float = 3e-3) -> np.ndarray:
    """Train on the training split; whether each test question is answered right (bool array, test order). Runs on
    one torch thread (small batches: more threads only contend, about 0.03 s per step here)."""
    with one_torch_thread():
        return _train_probe(data, variant, seed, epochs, batch_size, hidden, lr)


def _train_probe(data: ProbeData, variant: str, seed: int, epochs: int, batch_size: int, hidden: int,
                 lr: float) -> np.ndarray:
    encoder, two_cells = VARIANTS[variant]
    graphs = data.with_cells if two_cells else data.without_cells
    seed_everything(seed)
    model = Probe(encoder, data.queries.shape[1], hidden)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    train, test = data.split["train"], data.split["test"]
    rng = np.random.default_rng(seed)

    def run(ids: list[int]) -> Tensor:
        batch = Batch.from_data_list([graphs[i] for i in ids])
        return model(batch, data.queries[ids], [data.families[i] for i in ids])

    for _ in range(epochs):
        model.train()
        order = rng.permutation(train).tolist()
        for start in range(0, len(order), batch_size):
            ids = order[start:start + batch_size]
            loss = nn.functional.cross_entropy(run(ids), data.labels[ids])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        predicted = torch.cat([run(test[s:s + 256]).argmax(-1) for s in range(0, len(test), 256)])
    return (predicted == data.labels[test]).numpy()


def run_probes(datasets: dict[str, ProbeData], seeds: list[int], variants: list[str] | None = None,
               progress: bool = True, **options) -> pd.DataFrame:
    """One row per (input, variant, seed, test question): whether it was answered right."""
    rows = []
    jobs = [(source, variant, seed) for source in datasets for variant in (variants or list(VARIANTS))
            for seed in seeds]
    for source, variant, seed in tqdm(jobs, desc="probes", unit="run", disable=not progress):
        data = datasets[source]
        right = train_probe(data, variant, seed, **options)
        encoder, two_cells = VARIANTS[variant]
        rows += [{"input": source, "variant": variant, "encoder": encoder, "two_cells": two_cells, "seed": seed,
                  "question": q, "family": data.families[q], "correct": bool(c)}
                 for q, c in zip(data.split["test"], right)]
    return pd.DataFrame(rows)


def probe_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per (encoder, two_cells, input, family): mean over seeds, its standard deviation, seeds, n."""
    per_seed = runs.groupby(["encoder", "two_cells", "input", "family", "seed"]).correct.mean().reset_index()
    families = per_seed.assign(family=per_seed.family)
    overall = runs.groupby(["encoder", "two_cells", "input", "seed"]).correct.mean().reset_index().assign(family="all")
    both = pd.concat([families, overall], ignore_index=True)
    grouped = both.groupby(["encoder", "two_cells", "input", "family"], sort=False).correct
    table = pd.DataFrame({"accuracy": grouped.mean(), "std": grouped.std(), "seeds": grouped.size()}).reset_index()
    sizes = runs.drop_duplicates(["input", "question"]).groupby(["input", "family"]).size()
    table["n"] = [sizes.get((i, f), sizes.groupby(level=0).sum().get(i)) if f != "all"
                  else sizes.groupby(level=0).sum().get(i) for i, f in zip(table.input, table.family)]
    return table


def paired_effect(runs: pd.DataFrame, with_variant: str = "cellular",
                  without_variant: str = "cellular w/o 2-cells") -> pd.DataFrame:
    """Per input and family (and all): mean per-question difference in correctness (averaged over seeds) of
    `with_variant` minus `without_variant`, its 95% t-interval, the paired t-test's p, and n questions."""
    rows = []
    for source, part in runs.groupby("input", sort=False):
        mean = part.groupby(["variant", "question"]).correct.mean().unstack(0)
        family = part.drop_duplicates("question").set_index("question").family
        diff = (mean[with_variant] - mean[without_variant]).rename("diff")
        for name, d in [("all", diff)] + [(f, diff[family[diff.index] == f]) for f in family.unique()]:
            n = len(d)
            sem = d.std(ddof=1) / np.sqrt(n) if n > 1 else float("nan")
            half = stats.t.ppf(0.975, n - 1) * sem if n > 1 else float("nan")
            p = stats.ttest_1samp(d, 0.0).pvalue if n > 1 and d.std() > 0 else 1.0
            rows.append({"input": source, "family": name, "diff": d.mean(), "ci_lo": d.mean() - half,
                         "ci_hi": d.mean() + half, "p": p, "n": n})
    return pd.DataFrame(rows)
