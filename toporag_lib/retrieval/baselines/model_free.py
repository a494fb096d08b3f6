"""The baselines' retrievals: G-Retriever's PCST, shortest paths (the paper's "w/o TSR"), the whole graph, k-hop
neighbourhoods and KAPING's top triples. Each returns the cells it picks; `retrieve` closes them under the boundary.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph

from toporag_lib.retrieval import pcst
from toporag_lib.retrieval.prizes import (
    gretriever_edge_prizes,
    rank_prizes,
    top_k,
    unit_cosine,
)
from toporag_lib.retrieval.subcomplex import Subcomplex, empty_ids
from toporag_lib.topology.complex import CellComplex


def gretriever(cc: CellComplex, q_emb, k0: int, k1: int, cost_e: float) -> Subcomplex:
    if cc.num_cells(1) == 0:
        return Subcomplex(np.arange(cc.num_nodes), empty_ids(), empty_ids())
    node_p = rank_prizes(unit_cosine(q_emb, cc.unit_features(0)), k0)
    edge_p, cost = gretriever_edge_prizes(unit_cosine(q_emb, cc.unit_features(1)), k1, cost_e)
    sol = pcst.solve(cc.num_nodes, cc.edge_index(), node_p, edge_p, cost)
    return Subcomplex(sol.nodes, sol.edges, empty_ids())


def _first_edge_of_pair(cc: CellComplex) -> dict[tuple[int, int], int]:
    lo, hi = np.minimum(cc.edge_src, cc.edge_dst), np.maximum(cc.edge_src, cc.edge_dst)
    keys, first = np.unique(lo.astype(np.int64) * cc.num_nodes + hi, return_index=True)
    return {(int(k) // cc.num_nodes, int(k) % cc.num_nodes): int(j) for k, j in zip(keys, first)}


def shortest_path(cc: CellComplex, q_emb, k0: int) -> Subcomplex:
    seeds = top_k(unit_cosine(q_emb, cc.unit_features(0)), k0)
    if len(seeds) < 2 or cc.num_cells(1) == 0:
        return Subcomplex(seeds, empty_ids(), empty_ids())
    _, pred = csgraph.shortest_path(cc.skeleton(), unweighted=True, indices=seeds, return_predecessors=True)
    pair_edge = _first_edge_of_pair(cc)
    edges = []
    for i, source in enumerate(seeds):
        for target in seeds[i + 1:]:
            node = target
            while pred[i, node] >= 0:
                prev = pred[i, node]
                edges.append(pair_edge[(min(prev, node), max(prev, node))])
                node = prev
    return Subcomplex(seeds, np.array(edges, dtype=np.int64), empty_ids())


def whole_graph(cc: CellComplex, q_emb, k2: int) -> Subcomplex:
    """Every cell (what G-Retriever does on ExplaGraphs); with k2 = 0 no 2-cell ("w/o CRL" on such datasets)."""
    return Subcomplex(np.arange(cc.num_nodes), np.arange(cc.num_cells(1)),
                      np.arange(cc.num_cells(2)) if k2 > 0 else empty_ids())


def khop(cc: CellComplex, q_emb, k0: int, hops: int) -> Subcomplex:
    seeds = top_k(unit_cosine(q_emb, cc.unit_features(0)), k0)
    dist = csgraph.dijkstra(cc.skeleton(), unweighted=True, indices=seeds, limit=hops) if len(seeds) \
        else np.full((1, cc.num_nodes), np.inf)
    inside = np.isfinite(dist).any(axis=0)
    edges = np.flatnonzero(inside[cc.edge_src] & inside[cc.edge_dst])
    edge_in = np.zeros(cc.num_cells(1), dtype=bool)
    edge_in[edges] = True
    owner = np.repeat(np.arange(cc.num_cells(2)), cc.cell_lengths())
    outside = np.bincount(owner, weights=~edge_in[cc.cell_edges], minlength=cc.num_cells(2))
    return Subcomplex(np.flatnonzero(inside), edges, np.flatnonzero(outside == 0))


def kaping(cc: CellComplex, q_emb, k1: int) -> Subcomplex:
    return Subcomplex(empty_ids(), top_k(unit_cosine(q_emb, cc.unit_features(1)), k1), empty_ids())
