"""Shortest paths in a complex's undirected 1-skeleton, as the learned retrievers label and extract them."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph

from toporag_lib.retrieval.subcomplex import empty_ids
from toporag_lib.topology.complex import CellComplex


def hops(cc: CellComplex, sources: np.ndarray) -> np.ndarray:
    """[len(sources), num_nodes] hop distances in the undirected graph (inf where unreachable)."""
    return csgraph.shortest_path(cc.skeleton(), unweighted=True, indices=np.asarray(sources, dtype=np.int64))


def shortest_path_edges(cc: CellComplex, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Sorted ids of every edge on some shortest undirected path from a source to a target (all shortest paths of
    every pair, as SubgraphRAG labels its training triples).

    Edge u-v lies on a shortest s-t path iff d(s, u) + 1 + d(v, t) = d(s, t), or the same with u and v swapped.
    Pairs with s = t or no path contribute nothing; parallel edges on a path all count.
    """
    sources, targets = np.unique(sources).astype(np.int64), np.unique(targets).astype(np.int64)
    if len(sources) == 0 or len(targets) == 0 or cc.num_cells(1) == 0:
        return empty_ids()
    from_s, from_t = hops(cc, sources), hops(cc, targets)  # the graph is undirected: d(v, t) = d(t, v)
    length = from_s[:, targets][:, :, None]  # [S, T, 1]
    u, v = cc.edge_src, cc.edge_dst
    forward = from_s[:, None, u] + 1 + from_t[None, :, v] == length
    backward = from_s[:, None, v] + 1 + from_t[None, :, u] == length
    on_path = (forward | backward) & np.isfinite(length) & (length > 0)
    return np.flatnonzero(on_path.any(axis=(0, 1))).astype(np.int64)
