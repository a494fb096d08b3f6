"""Query-relevant subcomplex retrieval (paper section 4.2, Algorithm 3) and its baselines, behind one call.

    sub = retrieve(cc, q_emb, RetrievalConfig("toporag", k0=3, k1=5, k2=2, c2=1.0, cost_e=0.5))
    sub = retrieve(cc, q_emb, dataset_retrieval("synthetic_scenes", k2=3))

Methods:
- `toporag`: rank prizes k - r for the top-k0 0-cells and top-k1 1-cells (eq. 13); every 2-cell's prize is the sum
  of its boundary cells' prizes minus |boundary edges| * c2 (eq. 14); the top-k2 2-cells with a positive prize join
  the PCST instance as virtual nodes tied to their boundary vertices at zero cost (prized edges join as in
  G-Retriever); the solution is closed under the boundary, so it is a connected subcomplex (eq. 15).
- `gretriever`: G-Retriever's PCST on the 1-skeleton, identical to PyTorch Geometric's `retrieval_via_pcst`.
- `shortest_path` (the paper's "w/o TSR"): the union of shortest paths between the top-k0 nodes, no 2-cells.
- `whole_graph`: every cell (what G-Retriever does on ExplaGraphs).
- `khop`: the `hops`-hop neighbourhood of the top-k0 nodes, with every cell whose boundary lies inside it.
- `kaping`: the top-k1 triples (edges) by similarity and their end nodes, no search (KAPING's retrieval).

- `subgraphrag`, `gnnrag`: fitted on a training split, so not run here: `retriever.make_retriever` fits them
  (`retrieval.baselines.fitted`) and its result retrieves.

Each method function takes exactly its own parameters (`config.METHOD_PARAMS`), with no defaults of its own.
The cell complex must carry features (`lift(graph, node_emb, edge_emb)` or `cc.with_features`).
"""

from __future__ import annotations

import numpy as np
import torch

from toporag_lib.retrieval.baselines import model_free
from toporag_lib.retrieval.retrieval_config import FITTED_METHODS, RetrievalConfig
from toporag_lib.retrieval.subcomplex import Subcomplex
from toporag_lib.retrieval.toporag import toporag_retrieval
from toporag_lib.topology.complex import CellComplex, closure

RETRIEVERS = {"toporag": toporag_retrieval, "gretriever": model_free.gretriever,
              "shortest_path": model_free.shortest_path, "whole_graph": model_free.whole_graph,
              "khop": model_free.khop, "kaping": model_free.kaping}


class QueryEmbeddingError(ValueError):
    """A query embedding no retrieval can rank by: of the wrong shape, not finite, or all zeros."""


def check_query(q_emb: torch.Tensor | np.ndarray, dim: int) -> None:
    """A query embedding is one finite, nonzero vector of the cells' feature size (QueryEmbeddingError otherwise).

    All zeros is refused, not given a rule: its cosine with every cell is undefined (0/0, read as 0), so every cell
    ties and the retrieval would be decided by the tie-breaks (the lowest ids; G-Retriever's prizes split evenly
    over every edge, which takes the whole graph) and look like an answer. No sentence encoder gives a zero vector;
    one means the query was never embedded (a placeholder, a failed encode), which should stop the run, named.
    """
    shape = tuple(q_emb.shape)
    if shape != (dim,) and shape != (1, dim):
        raise QueryEmbeddingError(f"query embedding of shape {shape}: expected ({dim},), the cells' feature size")
    finite = torch.isfinite(q_emb).all() if isinstance(q_emb, torch.Tensor) else np.isfinite(q_emb).all()
    if not finite:
        raise QueryEmbeddingError("query embedding has non-finite values (NaN or inf)")
    if not q_emb.any():
        raise QueryEmbeddingError("query embedding is all zeros: its cosine with every cell is undefined, so it ranks "
                                  "nothing (was the query embedded?)")


def retrieve(cc: CellComplex, q_emb: torch.Tensor | np.ndarray, config: RetrievalConfig) -> Subcomplex:
    """Retrieve a subcomplex of `cc` for the query embedding `q_emb` with `config`'s method and parameters (see the
    module docstring)."""
    if not isinstance(config, RetrievalConfig):
        raise TypeError(f"retrieve takes a RetrievalConfig, not {type(config).__name__} {config!r}: "
                        "RetrievalConfig(method, **params), or dataset_retrieval(dataset, **changes)")
    if config.method in FITTED_METHODS:
        raise ValueError(f"retrieval method {config.method!r} is fitted on a training split: "
                         "make_retriever(config, training) (toporag_lib.retrieval.retriever) fits it on the training "
                         "questions; retrieve with what it returns")
    if cc.z0 is None or cc.z1 is None:
        raise ValueError("the cell complex has no features: lift(graph, node_emb, edge_emb) first")
    check_query(q_emb, cc.z0.shape[1])
    params = config.params()
    sub = RETRIEVERS[config.method](cc, q_emb, **params)
    return Subcomplex(*closure(cc, sub.nodes, sub.edges, sub.cells2), method=config.method, params=params)
