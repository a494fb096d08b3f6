"""An LLM-free probe: can a graph encoder read the answer from a (sub)complex, and do 2-cells help it?

Each encoder (`nn.ENCODERS`; the cellular one also without 2-cells) reads the question's subcomplex (the retrieved
one, or the whole graph), every cell's feature x joined by x * z_q so that the encoder knows what is asked; a
readout per cell dimension, attention conditioned on the query or a plain mean (`READOUTS`), feeds an MLP head
(`Probe`) over the answer vocabulary of the question's family (`ANSWERS` of the testbed). One probe per family and
seed, trained with cross-entropy on the family's training questions for a fixed number of epochs and evaluated on
its test questions (one probe over all families learned nothing on attribute questions: the families' losses
compete for the shared readout). No LLM is involved, so it runs in minutes on a CPU.

On testbed version 3 the loop questions come as counterfactual twins (`meta["pair"]`): `probe_table` reports twin
accuracy (both twins right; a rule blind to the loop scores 0) beside accuracy. `paired_effect` compares the
cellular encoder with and without 2-cells question by question, and twin pair by twin pair: each question's (pair's)
correctness averaged over the seeds, the mean of the differences with its 95% t-interval and the two-sided p of a
paired t-test.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn
from torch_geometric.data import Batch
from torch_geometric.nn.aggr import AttentionalAggregation, MeanAggregation
from tqdm.auto import tqdm

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.testbed.vocabulary import ANSWERS
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
# "attention, plain inputs": the attention readout over an encoder fed x alone (no x * z_q), as the soft prompt's
# encoder is: whether weighing the cells against the question at the readout is enough (`nn.readout`).
READOUTS = ("attention", "mean", "attention, plain inputs")
RUN_KEYS = ["encoder", "two_cells", "input", "readout"]


@dataclass
class ProbeData:
    """Per question: its (sub)complex with and without 2-cells, query embedding, answer, family and twin pair id
    ("" for a question without a twin)."""

    with_cells: list[ComplexData]
    without_cells: list[ComplexData]
    queries: Tensor
    answers: list[str]
    families: list[str]
    split: dict[str, list[int]]
    pairs: list[str]

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
                     [s.meta["family"] for s in dataset], dataset.split,
                     [str(s.meta.get("pair", "")) for s in dataset])


class Probe(nn.Module):
    """A graph encoder on query-conditioned cell features, a readout per cell dimension, and an MLP head over
    [readout_0; readout_1; readout_2; z_q].

    With u_c = [h_c; z_q; m_c] (m_c = cos(x_c, z_q), scaled), the attention readout of dimension d is
    sum_c softmax_c(g_d(u_c)) W_d u_c over the complex's d-cells: the question picks the cells it asks about. The mean
    readout W_d mean_c u_c weighs every cell alike, so the one object or loop that holds the answer is diluted among
    all cells. Both are zero where a complex has no d-cells, and for the dimensions an encoder keeps no states of.
    "attention, plain inputs" zeroes the x * z_q half of the features: the question enters at the readout alone.
    """

    def __init__(self, encoder: str, in_dim: int, hidden: int, num_answers: int, readout: str = "attention") -> None:
        super().__init__()
        if readout not in READOUTS:
            raise ValueError(f"readout={readout!r}: expected one of {READOUTS}")
        self.encoder = build_encoder(encoder, 2 * in_dim, hidden, hidden, num_layers=2)
        width = hidden + in_dim + 1
        attention, self.plain_inputs = readout.startswith("attention"), readout.endswith("plain inputs")
        self.readouts = nn.ModuleList(
            AttentionalAggregation(nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, 1)),
                                   nn.Linear(width, hidden)) if attention
            else MeanAggregation() for _ in range(3))
        self.project = nn.ModuleList(nn.Identity() if attention else nn.Linear(width, hidden) for _ in range(3))
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
            conditioned = torch.zeros_like(product) if self.plain_inputs else product * scale ** 2
            setattr(batch, x, torch.cat([features * scale, conditioned], dim=-1))
        states, s = self.encoder.cell_states(batch)
        pooled = []
        for d, (readout, project) in enumerate(zip(self.readouts, self.project)):
            if d < len(states) and len(states[d]):
                index = s.batches[d]
                cells = torch.cat([states[d], queries[index], match[d]], dim=-1)
                pooled.append(project(readout(cells, index, dim_size=s.num_graphs)))
            else:
                pooled.append(queries.new_zeros(s.num_graphs, self.hidden))
        return self.head(torch.cat([*pooled, queries], dim=-1))


def train_probe(data: ProbeData, variant: str, family: str, seed: int, epochs: int = 30, batch_size: int = 64,
                hidden: int = 64, lr: float = 1e-3, weight_decay: float = 0.1, readout: str = "attention") -> np.ndarray:
    """Train a probe on the family's training questions; whether each of its test questions is answered right (bool
    array, test order). Runs on one torch thread (small batches: more threads only contend)."""
    with one_torch_thread():
        return _train_probe(data, variant, family, seed, epochs, batch_size, hidden, lr, weight_decay, readout)


def _train_probe(data: ProbeData, variant: str, family: str, seed: int, epochs: int, batch_size: int, hidden: int,
                 lr: float, weight_decay: float, readout: str) -> np.ndarray:
    encoder, two_cells = VARIANTS[variant]
    graphs = data.with_cells if two_cells else data.without_cells
    answers = list(ANSWERS[family])
    labels = torch.tensor([answers.index(a) if f == family else -1 for a, f in zip(data.answers, data.families)])
    seed_everything(seed)
    model = Probe(encoder, data.queries.shape[1], hidden, len(answers), readout)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
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


_SHARED: dict[str, ProbeData] = {}  # the probes' data, inherited by forked worker processes


def _train_job(job: tuple[str, str, str, int, str], options: dict) -> np.ndarray:
    source, readout, variant, seed, family = job
    return train_probe(_SHARED[source], variant, family, seed, readout=readout, **options)


def run_probes(datasets: dict[str, ProbeData], seeds: list[int], variants: list[str] | None = None,
               readouts: tuple[str, ...] = ("attention",), families: list[str] | None = None, progress: bool = True,
               workers: int = 1, **options) -> pd.DataFrame:
    """One row per (input, readout, variant, seed, test question): whether it was answered right (one probe per
    family, of `families`; None: every family), with the question's twin pair id. `workers` > 1 trains that many
    probes at once in forked processes (one torch thread each; every probe is seeded, so the rows do not depend on
    `workers`)."""
    unknown = sorted(set(families or ()) - set(ANSWERS))
    if unknown:
        raise ValueError(f"families={unknown}: expected some of {list(ANSWERS)}")
    jobs = [(source, readout, variant, seed, family) for source in datasets for readout in readouts
            for variant in (variants or list(VARIANTS)) for seed in seeds for family in (families or ANSWERS)]
    _SHARED.clear()
    _SHARED.update(datasets)
    try:
        if workers > 1:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                results = list(tqdm(pool.map(_train_job, jobs, [options] * len(jobs)), total=len(jobs),
                                    desc="probes", unit="run", disable=not progress))
        else:
            results = [_train_job(job, options) for job in tqdm(jobs, desc="probes", unit="run", disable=not progress)]
    finally:
        _SHARED.clear()
    rows = []
    for (source, readout, variant, seed, family), right in zip(jobs, results):
        data = datasets[source]
        encoder, two_cells = VARIANTS[variant]
        rows += [{"input": source, "readout": readout, "variant": variant, "encoder": encoder, "two_cells": two_cells,
                  "seed": seed, "question": q, "pair": data.pairs[q], "family": family, "correct": bool(c)}
                 for q, c in zip(data.questions("test", family), right)]
    return pd.DataFrame(rows)


def _twin_rows(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per `keys` and twin pair (questions with a pair id whose twin is also in `runs`): both answered right."""
    twins = runs[runs.pair != ""]
    whole = twins.groupby([*keys, "pair"]).correct.agg(["all", "size"]).reset_index()
    return whole[whole["size"] == 2].rename(columns={"all": "both"})


def probe_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per (encoder, two_cells, input, readout, family): mean over seeds, its standard deviation, seeds and
    n questions; for families with twins, twin accuracy (mean over seeds, its std) and n pairs."""
    keys = [*RUN_KEYS, "family"]
    per_seed = runs.groupby([*keys, "seed"]).correct.mean().reset_index()
    mixed = runs[runs.groupby(RUN_KEYS).family.transform("nunique") > 1]  # "all" only where several families ran
    overall = mixed.groupby([*RUN_KEYS, "seed"]).correct.mean().reset_index().assign(family="all")
    grouped = pd.concat([per_seed, overall], ignore_index=True).groupby(keys, sort=False).correct
    table = pd.DataFrame({"accuracy": grouped.mean(), "std": grouped.std(), "seeds": grouped.size()}).reset_index()
    questions = pd.concat([runs, mixed.assign(family="all")]).drop_duplicates([*keys, "question"])
    table = table.merge(questions.groupby(keys).size().rename("n").reset_index(), on=keys)
    twins = _twin_rows(runs, [*keys, "seed"])
    if len(twins):
        twin_seed = twins.groupby([*keys, "seed"]).both.mean().groupby(keys)
        twin = pd.DataFrame({"twin": twin_seed.mean(), "twin_std": twin_seed.std(),
                             "pairs": twins.groupby(keys).pair.nunique()}).reset_index()
        table = table.merge(twin, on=keys, how="left")
    return table


def paired_effect(runs: pd.DataFrame, with_variant: str = "cellular",
                  without_variant: str = "cellular w/o 2-cells") -> pd.DataFrame:
    """Per input, readout and family (and all): `paired_test.mean_difference` of the per-question correctness
    (averaged over seeds) of `with_variant` minus `without_variant`: mean, 95% t-interval, paired t-test's p, the
    difference detectable with 80% power, and n; `measure` "accuracy" over questions, "twin" over twin pairs (both
    twins right, averaged over seeds)."""
    rows = []
    for (source, readout), part in runs.groupby(["input", "readout"], sort=False):
        mean = part.groupby(["variant", "question"]).correct.mean().unstack(0)
        family = part.drop_duplicates("question").set_index("question").family
        diff = mean[with_variant] - mean[without_variant]
        overall = [("all", diff)] if family.nunique() > 1 else []
        for name, d in overall + [(f, diff[family[diff.index] == f]) for f in family.unique()]:
            rows.append({"input": source, "readout": readout, "family": name, "measure": "accuracy",
                         **mean_difference(d.to_numpy())})
        twins = _twin_rows(part, ["variant", "family", "seed"])
        for name, pairs in twins.groupby("family", sort=False):
            both = pairs.groupby(["variant", "pair"]).both.mean().unstack(0)
            rows.append({"input": source, "readout": readout, "family": name, "measure": "twin",
                         **mean_difference((both[with_variant] - both[without_variant]).to_numpy())})
    return pd.DataFrame(rows)
