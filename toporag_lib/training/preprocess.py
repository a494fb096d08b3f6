"""Preprocessing shared by retrieval, training and the notebooks: embed every text once, lift every distinct graph
once, retrieve a subcomplex per question.

    prepared = prepare(dataset)                       # embeddings (disk-cached) + one CellComplex per graph, at the
                                                      # dataset's own edge texts and lifting (or edge_text=, lift=)
    subs = retrieve_all(prepared, RetrievalConfig("toporag", k0=3, k1=5, k2=2, c2=1.0))
    learned = RetrievalConfig("subgraphrag", top_k=10)                  # learned methods: fitted on train first
    subs = retrieve_all(prepared, learned, fitted=fit_retriever(prepared, learned, prepared.dataset.split["train"]))

Questions about the same graph (one image, many questions) share its complex. All of this is topology and
similarity work done before training, so a training step pays nothing for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from tqdm.auto import tqdm

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.graph import QASample
from toporag_lib.data.registry import dataset_spec
from toporag_lib.embed import TextEncoder, embed_graphs
from toporag_lib.retrieval.retriever import Question, Retriever
from toporag_lib.retrieval.subcomplex import Subcomplex
from toporag_lib.topology.complex import CellComplex
from toporag_lib.topology.lifting import LiftConfig
from toporag_lib.topology.lifting_cache import lift_cached
from toporag_lib.topology.lifting_many import lift_many


@dataclass
class PreparedDataset:
    """A dataset with its complexes (one per distinct graph) and question embeddings (one per sample)."""

    dataset: QADataset
    complexes: list[CellComplex]
    graph_of: list[int]  # sample index -> index into `complexes`
    queries: torch.Tensor  # [num_samples, dim]
    lift: LiftConfig

    def complex_of(self, i: int) -> CellComplex:
        return self.complexes[self.graph_of[i]]

    def sample(self, i: int) -> QASample:
        return self.dataset[i]

    def question(self, i: int) -> Question:
        """Sample i, its complex and its query embedding: what a retriever reads."""
        return self.dataset[i], self.complex_of(i), self.queries[i]

    def questions(self, indices: Sequence[int]) -> Iterator[Question]:
        """`question(i)` for each index, lazily (a model-free retriever reads none of its training questions)."""
        return (self.question(i) for i in indices)


class Encoder(Protocol):
    """What `prepare` needs of a sentence encoder (`embed.TextEncoder`, or a Dask worker's uncached one)."""

    def encode(self, texts: Sequence[str]) -> torch.Tensor: ...


def prepare(dataset: QADataset, encoder: Encoder | None = None, *, edge_text: str | None = None,
            lift: LiftConfig | None = None, progress: bool = True, cache_lifts: bool = False,
            timings: dict[str, float] | None = None) -> PreparedDataset:
    """Embed all node, edge and query texts (eq. 7 and 11) and lift each distinct graph (Algorithm 1): the one
    preprocessing path, which the trainer runs on its splits, a Dask worker on its shard (`training.sharded`) and
    the efficiency study stage by stage.

    `edge_text` is what an edge's feature embeds (`embed.embed_graphs`) and `lift` how graphs are lifted; None takes
    the dataset's own (`data.registry`). `cache_lifts` keeps each lifted complex on disk beside the embeddings
    (`lifting_cache.lift_cached`): worth it for slow lifts (a minimum cycle basis, long DFS cycles); a default BFS
    lift is as fast as reading its file. `timings`, when given, gets the seconds of each stage ("embedding_s",
    "lifting_s").
    """
    edge_text = dataset_spec(dataset.name).edge_text if edge_text is None else edge_text
    lift = LiftConfig(**dataset_spec(dataset.name).lift) if lift is None else lift
    encoder = encoder or TextEncoder(progress=progress)
    timings = {} if timings is None else timings
    representatives, graph_of = dataset.distinct_graphs()
    graphs = [dataset[i].graph for i in representatives]
    start = time.perf_counter()
    features = embed_graphs(graphs, encoder, edge_text)
    queries = encoder.encode([s.query for s in dataset])
    timings["embedding_s"] = time.perf_counter() - start
    start = time.perf_counter()
    if cache_lifts:
        complexes = [lift_cached(g, node_emb=nodes, edge_emb=edges, **lift.to_dict())
                     for g, (nodes, edges) in tqdm(list(zip(graphs, features)), desc=f"lifting {dataset.name}",
                                                   unit="graph", disable=not progress)]
    else:  # all graphs at once (`lift_many`: the same complexes as `lift`, graph by graph)
        complexes = [cc.with_features(nodes, edges)
                     for cc, (nodes, edges) in zip(lift_many(graphs, **lift.to_dict()), features)]
    timings["lifting_s"] = time.perf_counter() - start
    return PreparedDataset(dataset, complexes, graph_of, queries, lift)


def retrieve_all(prepared: PreparedDataset, retriever: Retriever, indices: Sequence[int] | None = None,
                 progress: bool = False) -> list[Subcomplex]:
    """One subcomplex per sample (or per index in `indices`), retrieved by `retriever`
    (`retrieval.retriever.make_retriever`; a fitted one fitted on `prepared.questions(train_indices)`)."""
    indices = range(len(prepared.dataset)) if indices is None else indices
    bar = tqdm(indices, desc=f"retrieving ({retriever.config.method})", unit="question", disable=not progress)
    return [retriever.retrieve(*prepared.question(i)) for i in bar]
