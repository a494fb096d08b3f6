"""Query-relevant subcomplex retrieval (paper section 4.2, Algorithm 3) and its baselines, behind one call.

    sub = retrieve(cc, q_emb, method="toporag", k0=3, k1=5, k2=2, c2=1.0, cost_e=0.5)
    sub = retrieve(cc, q_emb, **RetrievalConfig(k2=3).kwargs())

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

- `subgraphrag`, `gnnrag`: learned on a training split, so not run here: `training.preprocess.fit_retriever` fits
  them (`retrieval.learned`) and its result retrieves.

Each method takes only its own parameters (`config.METHOD_PARAMS`; another keyword is a TypeError).
The cell complex must carry features (`lift(graph, node_emb, edge_emb)` or `cc.with_features`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from toporag_lib.retrieval import baselines
from toporag_lib.retrieval.config import (
    LEARNED_METHODS,
    METHOD_PARAMS,
    METHODS,
    RetrievalConfig,
)
from toporag_lib.retrieval.subcomplex import Subcomplex
from toporag_lib.retrieval.toporag import toporag_retrieval
from toporag_lib.topology.complex import CellComplex, closure

RETRIEVERS = {"toporag": toporag_retrieval, "gretriever": baselines.gretriever,
              "shortest_path": baselines.shortest_path, "whole_graph": baselines.whole_graph, "khop": baselines.khop,
              "kaping": baselines.kaping}


def check_query(q_emb: torch.Tensor | np.ndarray, dim: int) -> None:
    """A query embedding is one finite vector of the cells' feature size."""
    shape = tuple(q_emb.shape)
    if shape != (dim,) and shape != (1, dim):
        raise ValueError(f"query embedding of shape {shape}: expected ({dim},), the cells' feature size")
    finite = torch.isfinite(q_emb).all() if isinstance(q_emb, torch.Tensor) else np.isfinite(q_emb).all()
    if not finite:
        raise ValueError("query embedding has non-finite values (NaN or inf)")


def retrieve(cc: CellComplex, q_emb: torch.Tensor | np.ndarray, method: str = "toporag", **params: Any) -> Subcomplex:
    """Retrieve a subcomplex of `cc` for the query embedding `q_emb` with `method` (see the module docstring);
    parameters not given take `RetrievalConfig`'s defaults."""
    if method in LEARNED_METHODS:
        raise ValueError(f"retrieval method {method!r} is learned from a training split: fit it first with "
                         f"toporag_lib.training.preprocess.fit_retriever(prepared, {method!r}, train_indices, ...) "
                         "and retrieve with what it returns (or retrieve_all(..., fitted=...))")
    if method not in METHODS:
        raise ValueError(f"unknown retrieval method {method!r}; known: {METHODS}")
    unknown = set(params) - set(METHOD_PARAMS[method])
    if unknown:
        raise TypeError(f"retrieval method {method!r} takes {list(METHOD_PARAMS[method])}, not {sorted(unknown)}")
    if cc.z0 is None or cc.z1 is None:
        raise ValueError("the cell complex has no features: lift(graph, node_emb, edge_emb) first")
    check_query(q_emb, cc.z0.shape[1])
    params = RetrievalConfig(method, **params).kwargs()  # checks every value
    del params["method"]
    sub = RETRIEVERS[method](cc, q_emb, **params)
    return Subcomplex(*closure(cc, sub.nodes, sub.edges, sub.cells2), method=method, params=params)
