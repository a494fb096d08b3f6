"""An LLM-free probe: can a graph encoder read the answer from a (sub)complex, and do 2-cells help it?

Each encoder (`nn.ENCODERS`; the cellular one also without 2-cells) reads the question's subcomplex (the retrieved
one, or the whole graph), every cell's feature x joined by x * z_q so that the encoder knows what is asked; a
query-conditioned attention readout per cell dimension feeds an MLP head (`Probe`) over the answer vocabulary of
the question's family (`ANSWERS` of the testbed). One probe per family and seed, trained with cross-entropy on the
family's training questions for a fixed number of epochs and evaluated on its test questions (one probe over all
families learned nothing on attribute questions: the families' losses compete for the shared readout). No LLM is
involved, so it runs in minutes on a CPU.

`paired_effect` compares the cellular encoder with and without 2-cells question by question: each question's
correctness averaged over the seeds, the mean of the differences with its 95% t-interval and the two-sided p of a
paired t-test over questions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn
from torch_geometric.data import Batch
from torch_geometric.nn.aggr import AttentionalAggregation
from tqdm.auto import tqdm

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.testbed.questions_v2 import ANSWERS
from toporag_lib.embed import TextEncoder
from toporag_lib.nn import build_encoder
from toporag_lib.retrieval import retrieve
from toporag_lib.seeding import one_torch_thread, seed_everything
from toporag_lib.study.paired_test import mean_difference
from toporag_lib.topology.batching import ComplexData
from toporag_lib.training.preprocess import prepare
from toporag_lib.training.train_config import TrainConfig

VARIANTS = {"cellular": ("cellular", True), "cellular w/o 2-cells": ("cellular", False), "gcn": ("gcn", False),
            "gat": ("gat", False), "gt": ("gt", False)}
INPUTS = ("retrieved", "whole graph")


@dataclass
class ProbeData:
    """Per question: its (sub)complex with and without 2-cells, query embedding, answer and family."""

    with_cells: list[ComplexData]
    without_cells: list[ComplexData]
    queries: Tensor
    answers: list[str]
    families: list[str]
    split: dict[str, list[int]]

    def questions(self, split: str, family: str) -> list[int]:
        return [i for i in self.split[split] if self.families[i] == family]


def probe_data(dataset: QADataset, encoder: TextEncoder, config: TrainConfig, source: str) -> ProbeData:
    """The questions of `dataset` prepared under `config`'s lifting, edge texts and retrieval (`source`: "retrieved"
    or "whole graph")."""
    if source not in INPUTS:
        raise ValueError(f"source={source!r}: expected one of {INPUTS}")
    prepared = prepare(dataset, encoder, progress=False, edge_text=config.edge_text, lift=config.lift)
    with_cells, without_cells = [], []
    for i in range(len(dataset)):
        cc = prepared.complex_of(i)
        if source == "retrieved":
            sub = retrieve(cc, prepared.queries[i], config.retrieval)
            nodes, edges, cells = sub.nodes, sub.edges, sub.cells2
        else:
            nodes, edges, cells = np.arange(cc.num_cells(0)), np.arange(cc.num_cells(1)), np.arange(cc.num_cells(2))
        with_cells.append(ComplexData.from_complex(cc, nodes, edges, cells))
        without_cells.append(ComplexData.from_complex(cc, nodes, edges, []))
    return ProbeData(with_cells, without_cells, prepared.queries, [s.label for s in dataset],
                     [s.meta["family"] for s in dataset], dataset.split)


class Probe(nn.Module):
    """A graph encoder on query-conditioned cell features, a query-conditioned attention readout per cell
    dimension, and an MLP head over [readout_0; readout_1; readout_2; z_q].

    The readout of dimension d is sum_c softmax_c(g_d([h_c; z_q])) W_d [h_c; z_q] over the complex's d-cells (zero
    when it has none, and for the dimensions an encoder keeps no states of): the question picks the cells it asks
    about, where a mean over all cells would dilute the one object or loop that holds the answer.
    """

    def __init__(self, encoder: str, in_dim: int, hidden: int, num_answers: int) -> None:
        super().__init__()
        self.encoder = build_encoder(encoder, 2 * in_dim, hidden, hidden, num_layers=2)
        self.readouts = nn.ModuleList(
            AttentionalAggregation(nn.Sequential(nn.Linear(hidden + in_dim + 1, hidden), nn.ReLU(),
                                                 nn.Linear(hidden, 1)), nn.Linear(hidden + in_dim + 1, hidden))
            for _ in range(3))
        self.head = nn.Sequential(nn.Linear(3 * hidden + in_dim, hidden), nn.ReLU(), nn.Linear(hidden, num_answers))
        self.hidden = hidden

    def forward(self, batch: Batch, queries: Tensor) -> Tensor:
        batch = batch.clone()
        scale = queries.shape[-1] ** 0.5  # unit-norm embeddings: elements of size 1/scale, scaled to about 1
        match = []  # per dimension, each cell's cos(x_c, z_q), scaled
        for x, index in (("x0", batch.batch), ("x1", batch.batch_1), ("x2", batch.batch_2)):
            features = getattr(batch, x)
            product = features * queries[index]
            match.append(product.sum(-1, keepdim=True) * scale)
            setattr(batch, x, torch.cat([features * scale, product * scale ** 2], dim=-1))
        states, s = self.encoder.cell_states(batch)
        pooled = []
        for d, readout in enumerate(self.readouts):
            if d < len(states) and len(states[d]):
                index = s.batches[d]
                pooled.append(readout(torch.cat([states[d], queries[index], match[d]], dim=-1), index,
                                      dim_size=s.num_graphs))
            else:
                pooled.append(queries.new_zeros(s.num_graphs, self.hidden))
        return self.head(torch.cat([*pooled, queries], dim=-1))


def train_probe(data: ProbeData, variant: str, family: str, seed: int, epochs: int = 30, batch_size: int = 64,
                hidden: int = 64, lr: float = 1e-3, weight_decay: float = 0.1) -> np.ndarray:
    """Train a probe on the family's training questions; whether each of its test questions is answered right (bool
    array, test order). Runs on one torch thread (small batches: more threads only contend)."""
    with one_torch_thread():
        return _train_probe(data, variant, family, seed, epochs, batch_size, hidden, lr, weight_decay)


def _train_probe(data: ProbeData, variant: str, family: str, seed: int, epochs: int, batch_size: int, hidden: int,
                 lr: float, weight_decay: float) -> np.ndarray:
    encoder, two_cells = VARIANTS[variant]
    graphs = data.with_cells if two_cells else data.without_cells
    answers = list(ANSWERS[family])
    labels = torch.tensor([answers.index(a) if f == family else -1 for a, f in zip(data.answers, data.families)])
    seed_everything(seed)
    model = Probe(encoder, data.queries.shape[1], hidden, len(answers))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    train, test = data.questions("train", family), data.questions("test", family)
    rng = np.random.default_rng(seed)

    def run(ids: list[int]) -> Tensor:
        return model(Batch.from_data_list([graphs[i] for i in ids]), data.queries[ids])

    for _ in range(epochs):
        model.train()
        order = rng.permutation(train).tolist()
        for start in range(0, len(order), batch_size):
            ids = order[start:start + batch_size]
            loss = nn.functional.cross_entropy(run(ids), labels[ids])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        predicted = torch.cat([run(test[s:s + 256]).argmax(-1) for s in range(0, len(test), 256)])
    return (predicted == labels[test]).numpy()


def run_probes(datasets: dict[str, ProbeData], seeds: list[int], variants: list[str] | None = None,
               progress: bool = True, **options) -> pd.DataFrame:
    """One row per (input, variant, seed, test question): whether it was answered right (one probe per family)."""
    rows = []
    jobs = [(source, variant, seed, family) for source in datasets for variant in (variants or list(VARIANTS))
            for seed in seeds for family in ANSWERS]
    for source, variant, seed, family in tqdm(jobs, desc="probes", unit="run", disable=not progress):
        data = datasets[source]
        right = train_probe(data, variant, family, seed, **options)
        encoder, two_cells = VARIANTS[variant]
        rows += [{"input": source, "variant": variant, "encoder": encoder, "two_cells": two_cells, "seed": seed,
                  "question": q, "family": family, "correct": bool(c)}
                 for q, c in zip(data.questions("test", family), right)]
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
    """Per input and family (and all): `paired.mean_difference` of the per-question correctness (averaged over
    seeds) of `with_variant` minus `without_variant`: mean, 95% t-interval, paired t-test's p, the difference
    detectable with 80% power, and n questions."""
    rows = []
    for source, part in runs.groupby("input", sort=False):
        mean = part.groupby(["variant", "question"]).correct.mean().unstack(0)
        family = part.drop_duplicates("question").set_index("question").family
        diff = mean[with_variant] - mean[without_variant]
        for name, d in [("all", diff)] + [(f, diff[family[diff.index] == f]) for f in family.unique()]:
            rows.append({"input": source, "family": name, **mean_difference(d.to_numpy())})
    return pd.DataFrame(rows)
