"""Cellular lifting (paper section 4.1, Algorithms 1-2): a `TextualGraph` becomes a 2-dimensional cell complex.

Cells and ids. 0-cell i is node i and 1-cell j is edge j of the input graph, always (retrieval maps cells back
to the graph by these ids). A spanning forest of the underlying simple graph is grown ("bfs" or "dfs", visiting
neighbours in increasing index order, or "random": a minimum spanning tree under weights drawn from
`np.random.default_rng(seed)`, not a uniform spanning tree); each connected component is rooted at its
smallest node. Every simple edge outside the forest closes one fundamental cycle (its tree path plus itself),
which bounds one 2-cell. 2-cells are ordered by the id of the edge that made them (`cell_generator`).

Speed. `fundamental` traces all fundamental cycles at once with numpy (no Python loop over cycles). Beware that
DFS trees make long cycles (on a WebQSP-sized graph, ~400 edges each on average): memory grows with the total cycle
length, and the edge-edge upper adjacency with the sum of squared lengths (it is built on first use only;
`max_cycle_len` bounds it). Many small graphs: `lifting_many.lift_many` lifts them as one disjoint union.

Orientation. B1[src, j] = -1 and B1[dst, j] = +1. A 2-cell's boundary is stored as a closed walk that starts
with the edge that made it, along that edge's direction: nodes v_0 = its source, v_1 = its target, ...; edge
i joins v_i and v_{i+1 mod L}, with sign +1 when it points from v_i to v_{i+1}, else -1. B2 holds those signs,
so B1 @ B2 = 0.

Awkward cases, decided on purpose:
- Self-loop (u -> u): a 1-cell whose B1 column is zero (its boundary u - u cancels). It is never in the
  spanning forest and bounds no 2-cell. Its node is still listed as its face in `incidence_index(1)` (so
  message passing and retrieval reach the loop's text), but it makes no node upper-adjacent to itself.
- Parallel edges (several edges joining the same two nodes, in either direction): each stays its own 1-cell.
  The first of them (smallest edge id) stands for the pair in the simple graph and may be a tree edge. With
  `parallel="digon"` (default) every further one bounds a 2-cell of length 2 with that first edge, so the
  multi-edges stay represented and B1 @ B2 = 0; with `parallel="ignore"` they bound no 2-cell.
- Isolated nodes: 0-cells without cofaces. A graph without edges: a complex without 1- and 2-cells.
- A graph without nodes: ValueError.

Counting rule: #2-cells = (|E_simple| - |V| + #components) + (#extra parallel edges, under "digon"), where
E_simple is the set of distinct unordered pairs of distinct nodes joined by an edge. `max_cycle_len` drops the
2-cells with more boundary edges than the cap, so then #2-cells can be smaller (the cycle space is no longer
spanned).

`basis="minimum"` uses a minimum cycle basis of the simple graph instead (shortest cycles: triangles,
squares), from Horton's candidate cycles by greedy elimination over GF(2); the "generator" of such a 2-cell is
the edge that closes its candidate, `tree_mask` is None, and `tree`/`seed` play no part. It needs O(|V|^2)
memory and loops over candidates in Python (about 2 s on a WebQSP-sized graph): meant for small and medium
graphs (ExplaGraphs, SceneGraphs), not the default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from operator import itemgetter

import numpy as np
from torch import Tensor

from toporag_lib.data.graph import TextualGraph
from toporag_lib.settings import ConfigError
from toporag_lib.topology.complex import CellComplex
from toporag_lib.topology.fundamental import fundamental_cells, spanning_forest
from toporag_lib.topology.minimum_basis import minimum_basis_cells
from toporag_lib.topology.simple_graph import CellSet, SimpleGraph, offsets

TREES = ("bfs", "dfs", "random")

BASES = ("fundamental", "minimum")

PARALLEL = ("digon", "ignore")

__all__ = ["TREES", "BASES", "PARALLEL", "LiftConfig", "lift", "lift_edge_index"]


@dataclass(frozen=True)
class LiftConfig:
    """The lifting options, with their defaults (written here once; `lift`'s keywords take them from here)."""

    tree: str = "bfs"  # spanning tree of the fundamental cycles: "bfs", "dfs" or "random"
    seed: int = 0  # for tree="random"
    basis: str = "fundamental"  # or "minimum": a minimum cycle basis
    max_cycle_len: int | None = None  # 2-cells with more boundary edges are dropped
    parallel: str = "digon"  # parallel edges: "digon" (each extra one bounds a 2-cell of length 2) or "ignore"

    def __post_init__(self) -> None:
        try:
            check_options(1, self.tree, self.basis, self.max_cycle_len, self.parallel)
        except ValueError as err:
            raise ConfigError(f"LiftConfig.{err}") from None
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or not 0 <= self.seed < 2**32:
            raise ConfigError(f"LiftConfig.seed={self.seed!r}: expected an int in [0, 2**32) (numpy's seeds)")

    def to_dict(self) -> dict:
        return asdict(self)


def lift(graph: TextualGraph, node_emb: Tensor | None = None, edge_emb: Tensor | None = None,
         tree: str = LiftConfig.tree, seed: int = LiftConfig.seed, basis: str = LiftConfig.basis,
         max_cycle_len: int | None = LiftConfig.max_cycle_len, parallel: str = LiftConfig.parallel) -> CellComplex:
    """Lift `graph` into a cell complex (Algorithm 1); features are attached when both embeddings are given."""
    edges = graph.edges
    src = np.fromiter(map(itemgetter(0), edges), np.int64, len(edges))
    dst = np.fromiter(map(itemgetter(1), edges), np.int64, len(edges))
    cc = lift_edge_index(graph.num_nodes, src, dst, tree=tree, seed=seed, basis=basis,
                         max_cycle_len=max_cycle_len, parallel=parallel)
    if node_emb is None and edge_emb is None:
        return cc
    return cc.with_features(node_emb, edge_emb)


def lift_edge_index(num_nodes: int, src: np.ndarray, dst: np.ndarray, *, tree: str = LiftConfig.tree,
                    seed: int = LiftConfig.seed, basis: str = LiftConfig.basis,
                    max_cycle_len: int | None = LiftConfig.max_cycle_len,
                    parallel: str = LiftConfig.parallel) -> CellComplex:
    """`lift` on plain arrays: `num_nodes` nodes and edges `src[j] -> dst[j]` (no features)."""
    check_options(num_nodes, tree, basis, max_cycle_len, parallel)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise ValueError(f"edges must join nodes 0..{num_nodes - 1}")
    cap = np.iinfo(np.int64).max if max_cycle_len is None else max_cycle_len
    gen, ptr, nodes, edges, tree_mask = lifted_cells(num_nodes, src, dst, tree, seed, basis, cap, parallel)
    signs = np.where(src[edges] == nodes, 1, -1).astype(np.int8)
    options = {"tree": tree, "seed": seed, "basis": basis, "max_cycle_len": max_cycle_len, "parallel": parallel}
    return CellComplex(num_nodes, src, dst, ptr, nodes, edges, signs, gen, tree_mask, options)


def lifted_cells(num_nodes: int, src: np.ndarray, dst: np.ndarray, tree: str, seed: int, basis: str, cap: int,
                 parallel: str, node_graph: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(generator, cell_ptr, flat nodes, flat edges, tree_mask) of the 2-cells of checked int64 edge arrays.

    `node_graph` (sorted) marks `src, dst` as a disjoint union of graphs (`lifting_many`): the random tree then
    draws each graph's weights as if that graph were lifted alone.
    """
    simple = SimpleGraph.build(num_nodes, src, dst)
    tree_mask = None
    if basis == "fundamental":
        forest = spanning_forest(simple, tree, seed, node_graph)
        tree_mask = np.zeros(len(src), dtype=bool)
        tree_mask[forest.parent_edge[forest.parent_edge >= 0]] = True
        sets = [fundamental_cells(forest, simple, src, dst, tree_mask, cap)]
    else:
        sets = [minimum_basis_cells(simple, src, dst, cap)]
    if parallel == "digon" and cap >= 2:
        sets.append(_digon_cells(simple, src, dst))
    return (*_assemble(sets), tree_mask)


def _digon_cells(simple: SimpleGraph, src: np.ndarray, dst: np.ndarray) -> CellSet:
    """One 2-cell per extra parallel edge f: the walk src[f] -f-> dst[f] -r-> src[f], r the pair's first edge."""
    f, r = simple.extra, simple.extra_rep

    def write(nodes: np.ndarray, edges: np.ndarray, starts: np.ndarray) -> None:
        nodes[starts], nodes[starts + 1] = src[f], dst[f]
        edges[starts], edges[starts + 1] = f, r

    return CellSet(f, np.full(len(f), 2, dtype=np.int64), write)


def _assemble(sets: list[CellSet]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(generator, cell_ptr, flat nodes, flat edges) of all cells, ordered by generator edge."""
    gen = np.concatenate([c.gen for c in sets])
    lengths = np.concatenate([c.lengths for c in sets])
    order = np.argsort(gen, kind="stable")
    ptr = offsets(lengths[order])
    starts = np.empty_like(gen)
    starts[order] = ptr[:-1]
    nodes, edges = np.empty(ptr[-1], dtype=np.int64), np.empty(ptr[-1], dtype=np.int64)
    offset = 0
    for c in sets:
        c.write(nodes, edges, starts[offset:offset + len(c.gen)])
        offset += len(c.gen)
    return gen[order], ptr, nodes, edges


def check_options(num_nodes: int, tree: str, basis: str, max_cycle_len: int | None, parallel: str) -> None:
    if num_nodes == 0:
        raise ValueError("cannot lift a graph with no nodes: a cell complex needs at least one 0-cell")
    for name, value, allowed in (("tree", tree, TREES), ("basis", basis, BASES), ("parallel", parallel, PARALLEL)):
        if value not in allowed:
            raise ValueError(f"{name}={value!r}: expected one of {allowed}")
    if max_cycle_len is not None and max_cycle_len < 0:
        raise ValueError(f"max_cycle_len={max_cycle_len}: expected None or a non-negative int")
