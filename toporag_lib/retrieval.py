"""Query-relevant subcomplex retrieval (paper section 4.2, Algorithm 3) and its baselines, behind one call.

    sub = retrieve(cc, q_emb, method="toporag", k0=3, k1=5, k2=2, c2=1.0, cost_e=0.5)

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

The cell complex must carry features (`lift(graph, node_emb, edge_emb)` or `cc.with_features`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse import csgraph

from toporag_lib import pcst
from toporag_lib.lifting import CellComplex, boundary_positions, closure
from toporag_lib.prizes import cell_prizes, gretriever_edge_prizes, rank_prizes, top_k, unit_cosine

METHODS = ("toporag", "gretriever", "shortest_path", "whole_graph", "khop", "kaping")

# Per-dataset defaults: the paper's top-k (section 5.1; G-Retriever's cost_e); c2 and k2 are ours (swept in 03).
DATASET_DEFAULTS: dict[str, dict[str, Any]] = {
    "webqsp": {"method": "toporag", "k0": 3, "k1": 3, "k2": 2, "c2": 1.0, "cost_e": 0.5},
    "scenegraphs": {"method": "toporag", "k0": 3, "k1": 5, "k2": 2, "c2": 1.0, "cost_e": 0.5},
    "synthetic_scenes": {"method": "toporag", "k0": 3, "k1": 5, "k2": 2, "c2": 1.0, "cost_e": 0.5},
    "gqa_fixtures": {"method": "toporag", "k0": 3, "k1": 5, "k2": 2, "c2": 1.0, "cost_e": 0.5},
    "explagraphs": {"method": "whole_graph"},
}


@dataclass(frozen=True)
class Subcomplex:
    """Sorted indices of the retrieved nodes, edges (of the input graph) and 2-cells (of the complex)."""

    nodes: np.ndarray
    edges: np.ndarray
    cells2: np.ndarray
    method: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def num_cells(self, dim: int) -> int:
        return len((self.nodes, self.edges, self.cells2)[dim])

    def counts(self) -> dict[str, int]:
        return {"0-cells": len(self.nodes), "1-cells": len(self.edges), "2-cells": len(self.cells2)}


def retrieval_defaults(dataset: str) -> dict[str, Any]:
    """The retrieval settings used for `dataset` (method and its keyword parameters)."""
    return dict(DATASET_DEFAULTS.get(dataset, DATASET_DEFAULTS["scenegraphs"]))


def retrieve(cc: CellComplex, q_emb: torch.Tensor | np.ndarray, method: str = "toporag", **params: Any) -> Subcomplex:
    """Retrieve a subcomplex of `cc` for the query embedding `q_emb` with `method` (see the module docstring)."""
    if method not in METHODS:
        raise ValueError(f"unknown retrieval method {method!r}; known: {METHODS}")
    if cc.z0 is None or cc.z1 is None:
        raise ValueError("the cell complex has no features: lift(graph, node_emb, edge_emb) first")
    sub = RETRIEVERS[method](cc, q_emb, **params)
    return Subcomplex(*closure(cc, sub.nodes, sub.edges, sub.cells2), method=method, params=params)


def _empty() -> np.ndarray:
    return np.empty(0, dtype=np.int64)


def _edge_index(cc: CellComplex) -> np.ndarray:
    return np.stack([cc.edge_src, cc.edge_dst]).astype(np.int64)


def _toporag(cc: CellComplex, q_emb, k0: int = 3, k1: int = 5, k2: int = 2, c2: float = 1.0,
             cost_e: float = 0.5) -> Subcomplex:
    node_p = rank_prizes(unit_cosine(q_emb, cc.unit_features(0)), k0)
    edge_p = rank_prizes(unit_cosine(q_emb, cc.unit_features(1)), k1)
    cells, prizes2 = _empty(), np.empty(0, dtype=np.float32)
    if k2 > 0 and cc.num_cells(2):
        all_prizes = cell_prizes(node_p, edge_p, cc.cell_ptr, cc.cell_nodes, cc.cell_edges, c2)
        best = top_k(all_prizes, k2)
        cells = best[all_prizes[best] > 0]
        prizes2 = all_prizes[cells]
    if cc.num_cells(1) == 0:
        return Subcomplex(top_k(node_p, 1), _empty(), _empty())
    ptr = np.concatenate([[0], np.cumsum(cc.cell_lengths()[cells])]).astype(np.int64)
    members = cc.cell_nodes[boundary_positions(cc.cell_ptr, cells)]
    sol = pcst.solve(cc.num_nodes, _edge_index(cc), node_p, edge_p, cost_e, cell_ids=cells, cell_prizes=prizes2,
                     cell_vertex_ptr=ptr, cell_vertices=members)
    nodes = sol.nodes if len(sol.nodes) or len(sol.edges) or len(sol.cells) else top_k(node_p, 1)
    return Subcomplex(nodes, sol.edges, sol.cells)


def _gretriever(cc: CellComplex, q_emb, k0: int = 3, k1: int = 5, cost_e: float = 0.5, **_: Any) -> Subcomplex:
    if cc.num_cells(1) == 0:
        return Subcomplex(np.arange(cc.num_nodes), _empty(), _empty())
    node_p = rank_prizes(unit_cosine(q_emb, cc.unit_features(0)), k0)
    edge_p, cost = gretriever_edge_prizes(unit_cosine(q_emb, cc.unit_features(1)), k1, cost_e)
    sol = pcst.solve(cc.num_nodes, _edge_index(cc), node_p, edge_p, cost)
    return Subcomplex(sol.nodes, sol.edges, _empty())


def _skeleton(cc: CellComplex) -> sp.csr_array:
    n = cc.num_nodes
    ones = np.ones(len(cc.edge_src))
    adj = sp.csr_array((ones, (cc.edge_src, cc.edge_dst)), shape=(n, n))
    return ((adj + adj.T) > 0).astype(np.float64)


def _first_edge_of_pair(cc: CellComplex) -> dict[tuple[int, int], int]:
    lo, hi = np.minimum(cc.edge_src, cc.edge_dst), np.maximum(cc.edge_src, cc.edge_dst)
    keys, first = np.unique(lo.astype(np.int64) * cc.num_nodes + hi, return_index=True)
    return {(int(k) // cc.num_nodes, int(k) % cc.num_nodes): int(j) for k, j in zip(keys, first)}


def _shortest_path(cc: CellComplex, q_emb, k0: int = 3, **_: Any) -> Subcomplex:
    seeds = top_k(unit_cosine(q_emb, cc.unit_features(0)), k0)
    if len(seeds) < 2 or cc.num_cells(1) == 0:
        return Subcomplex(seeds, _empty(), _empty())
    _, pred = csgraph.shortest_path(_skeleton(cc), unweighted=True, indices=seeds, return_predecessors=True)
    pair_edge = _first_edge_of_pair(cc)
    edges = []
    for i, source in enumerate(seeds):
        for target in seeds[i + 1:]:
            node = target
            while pred[i, node] >= 0:
                prev = pred[i, node]
                edges.append(pair_edge[(min(prev, node), max(prev, node))])
                node = prev
    return Subcomplex(seeds, np.array(edges, dtype=np.int64), _empty())


def _whole_graph(cc: CellComplex, q_emb, **_: Any) -> Subcomplex:
    return Subcomplex(np.arange(cc.num_nodes), np.arange(cc.num_cells(1)), np.arange(cc.num_cells(2)))


def _khop(cc: CellComplex, q_emb, k0: int = 3, hops: int = 1, **_: Any) -> Subcomplex:
    seeds = top_k(unit_cosine(q_emb, cc.unit_features(0)), k0)
    dist = csgraph.dijkstra(_skeleton(cc), unweighted=True, indices=seeds, limit=hops) if len(seeds) \
        else np.full((1, cc.num_nodes), np.inf)
    inside = np.isfinite(dist).any(axis=0)
    edges = np.flatnonzero(inside[cc.edge_src] & inside[cc.edge_dst])
    edge_in = np.zeros(cc.num_cells(1), dtype=bool)
    edge_in[edges] = True
    owner = np.repeat(np.arange(cc.num_cells(2)), cc.cell_lengths())
    outside = np.bincount(owner, weights=~edge_in[cc.cell_edges], minlength=cc.num_cells(2))
    return Subcomplex(np.flatnonzero(inside), edges, np.flatnonzero(outside == 0))


def _kaping(cc: CellComplex, q_emb, k1: int = 5, **_: Any) -> Subcomplex:
    return Subcomplex(_empty(), top_k(unit_cosine(q_emb, cc.unit_features(1)), k1), _empty())


RETRIEVERS = {"toporag": _toporag, "gretriever": _gretriever, "shortest_path": _shortest_path,
              "whole_graph": _whole_graph, "khop": _khop, "kaping": _kaping}
