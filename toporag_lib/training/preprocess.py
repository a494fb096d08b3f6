"""Preprocessing shared by retrieval, training and the notebooks: embed every text once, lift every distinct graph
once, retrieve a subcomplex per question.

    prepared = prepare(dataset)                       # embeddings (disk-cached) + one CellComplex per graph, at the
                                                      # dataset's own edge texts and lifting (or edge_text=, lift=)
    subs = retrieve_all(prepared, method="toporag", k0=3, k1=5, k2=2, c2=1.0)
    fitted = fit_retriever(prepared, "subgraphrag", prepared.dataset.split["train"], top_k=10)  # learned methods
    subs = retrieve_all(prepared, method="subgraphrag", fitted=fitted)

Questions about the same graph (one image, many questions) share its complex. All of this is topology and
similarity work done before training, so a training step pays nothing for it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from tqdm.auto import tqdm

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.graph import QASample
from toporag_lib.data.registry import dataset_spec
from toporag_lib.embed import TextEncoder, embed_graphs
from toporag_lib.retrieval.config import LEARNED_METHODS, RetrievalConfig
from toporag_lib.retrieval.learned import FittedRetriever, fit
from toporag_lib.retrieval.methods import Subcomplex, retrieve
from toporag_lib.retrieval.question import GraphQuestion, graph_question
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


def question_of(prepared: PreparedDataset, i: int, targets: bool = False) -> GraphQuestion:
    """Sample i as the learned retrievers read it (`targets=True`: with its answer cells, for fitting)."""
    return graph_question(prepared.sample(i), prepared.complex_of(i), prepared.queries[i], targets)


def fit_retriever(prepared: PreparedDataset, method: str, train_indices: Sequence[int],
                  **params: Any) -> FittedRetriever:
    """Fit the learned retrieval `method` ("subgraphrag", "gnnrag"; `retrieval.learned`) with `params` on the samples
    at `train_indices` only: pass the training split, never validation or test."""
    return fit(method, [question_of(prepared, i, targets=True) for i in train_indices], **params)


def check_fitted(fitted: FittedRetriever | None, method: str, params: dict[str, Any]) -> None:
    """A learned `method` needs a fitted retriever made with the same parameters; another method takes none."""
    if method not in LEARNED_METHODS:
        if fitted is not None:
            raise ValueError(f"retrieval method {method!r} is not learned: it takes no fitted retriever")
        return
    if fitted is None:
        raise ValueError(f"retrieval method {method!r} is learned: fit it first, fit_retriever(prepared, {method!r}, "
                         "train_indices, ...), and pass the result as `fitted`")
    wanted = {k: v for k, v in RetrievalConfig(method, **params).kwargs().items() if k != "method"}
    if fitted.method != method or fitted.params != wanted:
        raise ValueError(f"the fitted retriever is {fitted.method!r} with {fitted.params}, but {method!r} with "
                         f"{wanted} was asked for: fit it with these parameters")


def retrieve_all(prepared: PreparedDataset, method: str = "toporag", indices: list[int] | None = None,
                 progress: bool = False, fitted: FittedRetriever | None = None, **params: Any) -> list[Subcomplex]:
    """One subcomplex per sample (or per index in `indices`), retrieved with `method` and `params`; a learned method
    retrieves with `fitted` (`fit_retriever`, with the same parameters)."""
    indices = range(len(prepared.dataset)) if indices is None else indices
    check_fitted(fitted, method, params)
    bar = tqdm(indices, desc=f"retrieving ({method})", unit="question", disable=not progress)
    if fitted is not None:
        return [fitted.retrieve(question_of(prepared, i)) for i in bar]
    return [retrieve(prepared.complex_of(i), prepared.queries[i], method, **params) for i in bar]
