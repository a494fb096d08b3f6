"""Lifting many graphs at once: `lift_many(graphs, **options)[i]` equals `lift(graphs[i], **options)` exactly.

Small graphs spend most of a `lift` in fixed costs, so the graphs are lifted as one disjoint union (node and edge
ids shifted by per-graph offsets): one simple graph, one spanning forest, one vectorised trace of all fundamental
cycles (`lifting.lifted_cells`); each graph's complex is then cut out of the flat arrays. It is the same lift
because shifting ids keeps their order: every component is rooted at the same node, BFS and DFS visit its nodes
in the same order, the random tree draws each graph's weights as if the graph were alone, and 2-cells ordered by
generator edge stay grouped by graph.

`indices=True` (default) also builds B1, B2 and the four message-passing index tensors of every complex in bulk
(`bulk_index`), as if `boundary(1)`, ..., `upper_adjacency_index(1)` had been called; the edge-edge adjacency has
sum L(L-1) columns over all 2-cells, large with DFS trees. A complex's arrays and tensors are views into buffers
shared by the batch (a tensor's storage covers its own range only).

`basis="minimum"` is not batched (its greedy elimination is a Python loop per graph): it falls back to per-graph
`lift`, whose indices are built on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import itemgetter

import numpy as np

from toporag_lib.data.graph import TextualGraph
from toporag_lib.topology.bulk_index import (
    Layout,
    index_memos,
    local_ptr,
    own_ptr_bounds,
    pieces,
)
from toporag_lib.topology.complex import CellComplex
from toporag_lib.topology.lifting import LiftConfig, check_options, lift, lifted_cells
from toporag_lib.topology.simple_graph import offsets

__all__ = ["lift_many"]


CHUNK_EDGES = 1 << 18
"""Graphs are lifted in unions of about this many edges: the numpy temporaries stay small and are reused."""


def lift_many(graphs: Sequence[TextualGraph], *, tree: str = LiftConfig.tree, seed: int = LiftConfig.seed,
              basis: str = LiftConfig.basis, max_cycle_len: int | None = LiftConfig.max_cycle_len,
              parallel: str = LiftConfig.parallel, indices: bool = True) -> list[CellComplex]:
    """`[lift(g, **options) for g in graphs]` in a few vectorised passes (no features: `cc.with_features` adds
    them); `indices` also builds every complex's B1, B2 and index tensors in bulk."""
    options = {"tree": tree, "seed": seed, "basis": basis, "max_cycle_len": max_cycle_len, "parallel": parallel}
    sizes = np.fromiter((len(g.nodes) for g in graphs), np.int64, len(graphs))
    check_options(int(sizes.min(initial=1)), tree, basis, max_cycle_len, parallel)
    if basis == "minimum":
        return [lift(g, **options) for g in graphs]
    edge_ptr = offsets(np.fromiter((len(g.edges) for g in graphs), np.int64, len(graphs)))
    ends = np.unique(np.searchsorted(edge_ptr, np.arange(CHUNK_EDGES, edge_ptr[-1], CHUNK_EDGES)).clip(1))
    bounds = [0, *ends.tolist(), len(graphs)] if len(graphs) else []
    return [cc for a, b in zip(bounds, bounds[1:]) if a < b
            for cc in _lift_union(graphs[a:b], sizes[a:b], options, indices)]


def _lift_union(graphs: Sequence[TextualGraph], sizes: np.ndarray, options: dict, indices: bool) -> list[CellComplex]:
    """Lift the disjoint union of `graphs` (`sizes` nodes each) once and cut it into per-graph complexes."""
    node_ptr = offsets(sizes)
    edge_ptr = offsets(np.fromiter((len(g.edges) for g in graphs), np.int64, len(graphs)))
    edges = list(chain.from_iterable(g.edges for g in graphs))
    src = np.fromiter(map(itemgetter(0), edges), np.int64, len(edges))
    dst = np.fromiter(map(itemgetter(1), edges), np.int64, len(edges))
    node_graph = np.repeat(np.arange(len(graphs)), sizes)
    edge_graph = np.repeat(np.arange(len(graphs)), np.diff(edge_ptr))
    if len(src) and (min(src.min(), dst.min()) < 0 or np.any(np.maximum(src, dst) >= sizes[edge_graph])):
        raise ValueError("every edge must join nodes of its own graph")
    cap = np.iinfo(np.int64).max if options["max_cycle_len"] is None else options["max_cycle_len"]
    union_src, union_dst = src + node_ptr[edge_graph], dst + node_ptr[edge_graph]
    gen, walk_ptr, walk_nodes, walk_edges, tree_mask = lifted_cells(
        int(node_ptr[-1]), union_src, union_dst, options["tree"], options["seed"], options["basis"], cap,
        options["parallel"], node_graph)
    cell_graph = edge_graph[gen]
    cell_ptr = offsets(np.bincount(cell_graph, minlength=len(graphs)))
    pos_graph = cell_graph.repeat(np.diff(walk_ptr))
    signs = np.where(union_src[walk_edges] == walk_nodes, 1, -1).astype(np.int8)
    lay = Layout(node_ptr, edge_ptr, cell_ptr, walk_ptr[cell_ptr], src, dst, walk_ptr, local_ptr(walk_ptr, cell_ptr),
                 walk_nodes - node_ptr[pos_graph], walk_edges - edge_ptr[pos_graph], cell_graph)
    return _complexes(lay, gen - edge_ptr[cell_graph], signs, tree_mask, options, indices)


def _complexes(lay: Layout, gen: np.ndarray, signs: np.ndarray, tree_mask: np.ndarray, options: dict,
               indices: bool) -> list[CellComplex]:
    """One `CellComplex` per graph, its arrays slices of the batch's (and its memo pre-filled when `indices`)."""
    by_edge = [pieces(a, lay.edge_ptr[:-1], lay.edge_ptr[1:]) for a in (lay.src, lay.dst, tree_mask)]
    by_position = [pieces(a, lay.pos_ptr[:-1], lay.pos_ptr[1:]) for a in (lay.walk_nodes, lay.walk_edges, signs)]
    ptrs = pieces(lay.local_cell_ptr, *own_ptr_bounds(lay.cell_ptr))
    gens = pieces(gen, lay.cell_ptr[:-1], lay.cell_ptr[1:])
    memos = index_memos(lay, signs, by_position[1], ptrs) if indices else [{} for _ in ptrs]
    return [CellComplex.unchecked(n, src, dst, ptr, nodes, edges, sgn, g, tree, dict(options), None, None, None, memo)
            for n, src, dst, tree, nodes, edges, sgn, ptr, g, memo
            in zip(np.diff(lay.node_ptr).tolist(), *by_edge, *by_position, ptrs, gens, memos)]
