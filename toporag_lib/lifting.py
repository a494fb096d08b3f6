"""Cellular lifting (paper section 4.1, Algorithms 1-2): a `TextualGraph` becomes a 2-dimensional cell complex.

Cells and ids. 0-cell i is node i and 1-cell j is edge j of the input graph, always (retrieval maps cells back
to the graph by these ids). A spanning forest of the underlying simple graph is grown ("bfs" or "dfs", visiting
neighbours in increasing index order, or "random": a minimum spanning tree under weights drawn from
`np.random.default_rng(seed)`, not a uniform spanning tree); each connected component is rooted at its
smallest node. Every simple edge outside the forest closes one fundamental cycle (its tree path plus itself),
which bounds one 2-cell. 2-cells are ordered by the id of the edge that made them (`cell_generator`).

Speed. All fundamental cycles are traced at once with numpy: a binary-lifting LCA for all non-tree edges, then
one vectorized step per tree level climbs from both ends of every cycle, writing straight into flat CSR-style
arrays. The cost is O(|E| log |E| + total cycle length), with no Python loop over cycles or their members.
Beware that DFS trees make long cycles (on a WebQSP-sized graph, ~400 edges each on average): memory grows
with the total cycle length, and the edge-edge upper adjacency with the sum of squared lengths (it is built on
first use only; `max_cycle_len` bounds it).

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

from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse import csgraph
from torch import Tensor

from toporag_lib.graph import TextualGraph

TREES = ("bfs", "dfs", "random")
BASES = ("fundamental", "minimum")
PARALLEL = ("digon", "ignore")

__all__ = ["TREES", "BASES", "PARALLEL", "Cell", "CellComplex", "lift", "lift_edge_index", "boundary_positions",
           "closure"]


class Cell(NamedTuple):
    """One 2-cell's boundary as a closed walk: edge i joins nodes[i] and nodes[i + 1 mod L]."""

    nodes: np.ndarray
    edges: np.ndarray
    signs: np.ndarray
    generator: int


@dataclass(frozen=True, eq=False, repr=False)
class CellComplex:
    """A 2-dimensional cell complex lifted from a graph; 2-cell boundaries are stored as flat walks (CSR-style).

    2-cell c's boundary is `cell_nodes[cell_ptr[c]:cell_ptr[c+1]]` (ordered nodes), `cell_edges[...]` (ordered
    edges) and `cell_signs[...]`; `cell_generator[c]` is the edge that made it. `tree_mask[j]` says whether edge
    j is in the spanning forest (None for `basis="minimum"`). `z0`, `z1`, `z2` are the cell features.
    Boundary matrices and index tensors are built on first use and cached: do not modify them in place.
    """

    num_nodes: int
    edge_src: np.ndarray
    edge_dst: np.ndarray
    cell_ptr: np.ndarray
    cell_nodes: np.ndarray
    cell_edges: np.ndarray
    cell_signs: np.ndarray
    cell_generator: np.ndarray
    tree_mask: np.ndarray | None
    options: dict
    z0: Tensor | None = None
    z1: Tensor | None = None
    z2: Tensor | None = None
    _memo: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        counts = ", ".join(f"{d}-cells={self.num_cells(d)}" for d in range(3))
        return f"CellComplex({counts}, options={self.options})"

    def num_cells(self, dim: int) -> int:
        """Number of cells of dimension `dim` (0, 1 or 2)."""
        return (self.num_nodes, len(self.edge_src), len(self.cell_generator))[_check_dim(dim, (0, 1, 2))]

    def cell_lengths(self) -> np.ndarray:
        """Number of boundary edges (= boundary nodes) of each 2-cell."""
        return np.diff(self.cell_ptr)

    def cell(self, c: int) -> Cell:
        """The boundary walk of 2-cell `c`."""
        a, b = self.cell_ptr[c], self.cell_ptr[c + 1]
        return Cell(self.cell_nodes[a:b], self.cell_edges[a:b], self.cell_signs[a:b], int(self.cell_generator[c]))

    def num_components(self) -> int:
        """Connected components of the 1-skeleton (isolated nodes count)."""
        return self._cached("components", lambda: _components(self.num_nodes, self.edge_src, self.edge_dst)[0])

    def boundary(self, dim: int) -> sp.csc_array:
        """Signed boundary matrix: B1 (|V| x |E|) for dim 1, B2 (|E| x |2-cells|) for dim 2; int32 CSC."""
        if _check_dim(dim, (1, 2)) == 1:
            return self._cached("B1", lambda: _node_edge_boundary(self.num_nodes, self.edge_src, self.edge_dst))
        return self._cached("B2", self._edge_cell_boundary)

    def incidence_index(self, dim: int) -> Tensor:
        """Face-coface pairs as a [2, nnz] long tensor: (node, edge) for dim 1, (edge, 2-cell) for dim 2.

        Dim 1 lists both ends of every edge and a self-loop's node once; dim 2 is exactly the nonzeros of B2.
        """
        if _check_dim(dim, (1, 2)) == 1:
            return self._cached("inc1", self._node_edge_index)
        return self._cached("inc2", lambda: torch.from_numpy(np.stack([self.cell_edges, self._cell_of_position()])))

    def upper_adjacency_index(self, dim: int) -> Tensor:
        """Upper adjacency through a shared coface as a [3, m] long tensor (a, b, coface), both directions.

        Dim 0: nodes joined by a (non-loop) edge. Dim 1: two edges on the boundary of the same 2-cell; this has
        sum(L * (L - 1)) columns over the 2-cells' lengths L, so it is built on first use only.
        """
        if _check_dim(dim, (0, 1)) == 0:
            return self._cached("adj0", self._node_adjacency)
        return self._cached("adj1", self._edge_adjacency)

    def with_features(self, node_emb: Tensor, edge_emb: Tensor) -> CellComplex:
        """Attach Z0 = node_emb, Z1 = edge_emb and Z2 = mean of each 2-cell's boundary 0- and 1-cell features."""
        _check_features(self, node_emb, edge_emb)
        z2 = _cell_means(self.cell_ptr, self.cell_nodes, self.cell_edges, torch.cat([node_emb, edge_emb]),
                         self.num_nodes)
        topology = {k: v for k, v in self._memo.items() if not k.startswith("unit")}  # features changed
        return replace(self, z0=node_emb, z1=edge_emb, z2=z2, _memo=topology)

    def unit_features(self, dim: int) -> Tensor:
        """Z0 or Z1 with rows scaled to unit length (float32), computed once: cosine similarity is then a matmul."""
        z = (self.z0, self.z1)[_check_dim(dim, (0, 1))]
        if z is None:
            raise ValueError("the cell complex has no features: lift(graph, node_emb, edge_emb) first")
        return self._cached(f"unit{dim}", lambda: torch.nn.functional.normalize(z.float(), dim=-1, eps=1e-8))

    def summary(self) -> dict:
        """Counts and cycle-length statistics, plus the lifting options."""
        lengths = self.cell_lengths()
        loops = self.edge_src == self.edge_dst
        simple_pairs = len(np.unique(_pair_keys(self.num_nodes, self.edge_src[~loops], self.edge_dst[~loops])))
        return {
            "num_0cells": self.num_nodes,
            "num_1cells": self.num_cells(1),
            "num_2cells": self.num_cells(2),
            "num_components": self.num_components(),
            "betti_1": simple_pairs - self.num_nodes + self.num_components(),
            "num_self_loops": int(loops.sum()),
            "num_parallel_extra": int((~loops).sum()) - simple_pairs,
            "num_digons": int((lengths == 2).sum()),
            "cell_length_mean": float(lengths.mean()) if len(lengths) else 0.0,
            "cell_length_max": int(lengths.max()) if len(lengths) else 0,
            **self.options,
        }

    def _cached(self, key: str, build):
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def _cell_of_position(self) -> np.ndarray:
        return np.repeat(np.arange(self.num_cells(2)), self.cell_lengths())

    def _edge_cell_boundary(self) -> sp.csc_array:
        shape = (self.num_cells(1), self.num_cells(2))
        return sp.csc_array((self.cell_signs.astype(np.int32), self.cell_edges, self.cell_ptr), shape=shape)

    def _node_edge_index(self) -> Tensor:
        loops = self.edge_src == self.edge_dst
        nodes = np.stack([self.edge_src, self.edge_dst], 1).ravel()
        edges = np.repeat(np.arange(self.num_cells(1)), 2)
        keep = ~np.stack([np.zeros_like(loops), loops], 1).ravel()
        return torch.from_numpy(np.stack([nodes[keep], edges[keep]]))

    def _node_adjacency(self) -> Tensor:
        ids = np.flatnonzero(self.edge_src != self.edge_dst)
        a, b = self.edge_src[ids], self.edge_dst[ids]
        return torch.from_numpy(np.stack([np.concatenate([a, b]), np.concatenate([b, a]), np.tile(ids, 2)]))

    def _edge_adjacency(self) -> Tensor:
        return torch.from_numpy(_edge_pairs_within_cells(self.cell_ptr, self.cell_edges))


def lift(graph: TextualGraph, node_emb: Tensor | None = None, edge_emb: Tensor | None = None, tree: str = "bfs",
         seed: int = 0, basis: str = "fundamental", max_cycle_len: int | None = None,
         parallel: str = "digon") -> CellComplex:
    """Lift `graph` into a cell complex (Algorithm 1); features are attached when both embeddings are given."""
    edges = graph.edges
    src = np.fromiter(map(itemgetter(0), edges), np.int64, len(edges))
    dst = np.fromiter(map(itemgetter(1), edges), np.int64, len(edges))
    cc = lift_edge_index(graph.num_nodes, src, dst, tree=tree, seed=seed, basis=basis,
                         max_cycle_len=max_cycle_len, parallel=parallel)
    if node_emb is None and edge_emb is None:
        return cc
    return cc.with_features(node_emb, edge_emb)


def lift_edge_index(num_nodes: int, src: np.ndarray, dst: np.ndarray, *, tree: str = "bfs", seed: int = 0,
                    basis: str = "fundamental", max_cycle_len: int | None = None,
                    parallel: str = "digon") -> CellComplex:
    """`lift` on plain arrays: `num_nodes` nodes and edges `src[j] -> dst[j]` (no features)."""
    _check_options(num_nodes, tree, basis, max_cycle_len, parallel)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise ValueError(f"edges must join nodes 0..{num_nodes - 1}")
    simple = _SimpleGraph.build(num_nodes, src, dst)
    cap = np.iinfo(np.int64).max if max_cycle_len is None else max_cycle_len
    tree_mask = None
    if basis == "fundamental":
        forest = _spanning_forest(simple, tree, seed)
        tree_mask = np.zeros(len(src), dtype=bool)
        tree_mask[forest.parent_edge[forest.parent_edge >= 0]] = True
        sets = [_fundamental_cells(forest, simple, src, dst, tree_mask, cap)]
    else:
        sets = [_minimum_basis_cells(simple, src, dst, cap)]
    if parallel == "digon" and cap >= 2:
        sets.append(_digon_cells(simple, src, dst))
    gen, ptr, nodes, edges = _assemble(sets)
    signs = np.where(src[edges] == nodes, 1, -1).astype(np.int8)
    options = {"tree": tree, "seed": seed, "basis": basis, "max_cycle_len": max_cycle_len, "parallel": parallel}
    return CellComplex(num_nodes, src, dst, ptr, nodes, edges, signs, gen, tree_mask, options)


def boundary_positions(cell_ptr: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Positions in the flat boundary arrays (`cell_nodes`, `cell_edges`, `cell_signs`) of the given 2-cells."""
    cells = np.asarray(cells, dtype=np.int64)
    lengths = cell_ptr[cells + 1] - cell_ptr[cells]
    before = np.cumsum(lengths) - lengths
    return np.repeat(cell_ptr[cells] - before, lengths) + np.arange(lengths.sum(), dtype=np.int64)


def closure(cc: CellComplex, nodes, edges, cells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Close a selection under the boundary: 2-cells bring their edges and nodes, edges bring their ends.

    Returns sorted unique (node ids, edge ids, 2-cell ids).
    """
    cells = np.unique(np.asarray(cells, dtype=np.int64))
    members = boundary_positions(cc.cell_ptr, cells)
    edges = np.unique(np.concatenate([np.asarray(edges, dtype=np.int64), cc.cell_edges[members]]))
    nodes = np.unique(np.concatenate([np.asarray(nodes, dtype=np.int64), cc.edge_src[edges], cc.edge_dst[edges]]))
    return nodes, edges, cells


class _SimpleGraph(NamedTuple):
    """The simple graph under a multigraph: pair k = (lo[k] < hi[k]) is stood for by edge rep[k]."""

    n: int
    lo: np.ndarray
    hi: np.ndarray
    keys: np.ndarray
    rep: np.ndarray
    extra: np.ndarray
    extra_rep: np.ndarray

    @classmethod
    def build(cls, n: int, src: np.ndarray, dst: np.ndarray) -> _SimpleGraph:
        ids = np.flatnonzero(src != dst)
        keys = _pair_keys(n, src[ids], dst[ids])
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        rep = ids[first]
        extra = rep[inverse] != ids
        return cls(n, uniq // n, uniq % n, uniq, rep, ids[extra], rep[inverse][extra])

    def pair_of(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Index of the pair {a, b} (both must be joined)."""
        return np.searchsorted(self.keys, _pair_keys(self.n, a, b))

    def adjacency(self, lo: np.ndarray, hi: np.ndarray, extra_nodes: int = 0) -> sp.csr_array:
        """Symmetric float adjacency (the dtype csgraph works in) with `extra_nodes` isolated nodes appended."""
        rows, cols = np.concatenate([lo, hi]), np.concatenate([hi, lo])
        return _csr(rows, cols, np.ones(len(rows)), self.n + extra_nodes)


class _Forest(NamedTuple):
    """A rooted spanning forest: `up[j][x]` is x's 2^j-th ancestor (up[0] the parent; a root is its own parent),
    `parent_edge[x]` the tree edge to x's parent (-1 at roots)."""

    parent_edge: np.ndarray
    depth: np.ndarray
    up: list[np.ndarray]


def _spanning_forest(simple: _SimpleGraph, tree: str, seed: int) -> _Forest:
    """BFS, DFS or random spanning forest, each component rooted at its smallest node."""
    n = simple.n
    adj = simple.adjacency(simple.lo, simple.hi, 1)  # node n: a virtual root, isolated for now
    roots = np.unique(_components_of(adj)[1][:n], return_index=True)[1]
    if tree == "random":
        weights = 1.0 + np.random.default_rng(seed).random(len(simple.lo))
        mst = csgraph.minimum_spanning_tree(_csr(simple.lo, simple.hi, weights, n)).tocoo()
        adj = simple.adjacency(mst.row, mst.col, 1)
    # Joining the virtual root (the last row) to every component's root makes the forest one tree; the
    # traversal from it needs only these out-edges.
    indptr = adj.indptr.copy()
    indptr[-1] += len(roots)
    adj = sp.csr_array((np.ones(indptr[-1]), np.concatenate([adj.indices, roots]), indptr), shape=adj.shape)
    traverse = csgraph.depth_first_order if tree == "dfs" else csgraph.breadth_first_order
    _, pred = traverse(adj, n, directed=True, return_predecessors=True)
    parent = pred[:n].astype(np.int64)
    parent[roots] = roots
    parent_edge = np.full(n, -1, dtype=np.int64)
    child = np.flatnonzero(parent != np.arange(n))
    parent_edge[child] = simple.rep[simple.pair_of(child, parent[child])]
    up, depth = _ancestor_tables(parent)
    return _Forest(parent_edge, depth, up)


def _ancestor_tables(parent: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Pointer jumping: up[j][x] = the 2^j-th ancestor of x (or its root), and every node's depth."""
    up, depth = [parent], (parent != np.arange(len(parent))).astype(np.int64)
    while True:
        ptr = up[-1]
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            return up, depth
        depth = depth + depth[ptr]
        up.append(nxt)


def _kth_ancestor(up: list[np.ndarray], nodes: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The k[i]-th ancestor of nodes[i], for all i at once (k never exceeds the depth)."""
    nodes = nodes.copy()
    for j, table in enumerate(up):
        hop = ((k >> j) & 1).astype(bool)
        nodes[hop] = table[nodes[hop]]
    return nodes


def _lowest_common_ancestor(forest: _Forest, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vectorized binary-lifting LCA of pairs in the same tree."""
    da, db = forest.depth[a], forest.depth[b]
    a, b = np.where(da >= db, a, b), np.where(da >= db, b, a)
    a = _kth_ancestor(forest.up, a, np.abs(da - db))
    for table in reversed(forest.up):
        ta, tb = table[a], table[b]
        move = ta != tb
        a, b = np.where(move, ta, a), np.where(move, tb, b)
    return np.where(a == b, a, forest.up[0][a])


class _CellSet(NamedTuple):
    """2-cells of one kind: the edge that made each, its length, and a writer of their walks into flat arrays.

    `write(nodes, edges, starts)` puts cell i's walk at `nodes[starts[i]:starts[i] + lengths[i]]` (same for edges).
    """

    gen: np.ndarray
    lengths: np.ndarray
    write: Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def _fundamental_cells(forest: _Forest, simple: _SimpleGraph, src: np.ndarray, dst: np.ndarray,
                       tree_mask: np.ndarray, cap: int) -> _CellSet:
    """The fundamental cycle of every non-tree simple edge g = s -> t, when no longer than `cap`."""
    gen = simple.rep[~tree_mask[simple.rep]]
    s, t = src[gen], dst[gen]
    w = _lowest_common_ancestor(forest, s, t)
    lt = forest.depth[t] - forest.depth[w]
    length = lt + forest.depth[s] - forest.depth[w] + 1
    keep = length <= cap
    gen, s, t, lt, length = gen[keep], s[keep], t[keep], lt[keep], length[keep]

    def write(nodes: np.ndarray, edges: np.ndarray, starts: np.ndarray) -> None:
        # The walk is s -g-> t -> ... -> w -> ... -> s. Going up from t, the j-th ancestor sits at 1 + j followed
        # by its parent edge; going up from s, the k-th parent edge sits at L - 1 - k followed by the node above
        # it, which for the last step is w.
        nodes[starts], edges[starts] = s, gen
        _climb(forest, t, lt, starts + 1, 1, nodes, edges, node_above=False)
        _climb(forest, s, length - 1 - lt, starts + length - 1, -1, nodes, edges, node_above=True)

    return _CellSet(gen, length, write)


def _climb(forest: _Forest, low: np.ndarray, steps: np.ndarray, at: np.ndarray, stride: int, nodes: np.ndarray,
           edges: np.ndarray, node_above: bool) -> None:
    """Climb `steps[c]` tree edges from `low[c]` for all cells c at once, one numpy step per tree level.

    Step j writes the edge at `at + stride * j` and, there too, the node below it (or above it, `node_above`).
    Cells are visited deepest first, so the cells still climbing at level j are a prefix.
    """
    order = np.argsort(-steps, kind="stable")
    steps, at, cur = steps[order], at[order], low[order]
    counts = np.searchsorted(-steps, -np.arange(steps[0] if len(steps) else 0), side="left")
    for j, count in enumerate(counts.tolist()):
        climbing, where = cur[:count], at[:count] + stride * j
        edges[where] = forest.parent_edge[climbing]
        above = forest.up[0][climbing]
        nodes[where] = above if node_above else climbing
        cur[:count] = above


def _digon_cells(simple: _SimpleGraph, src: np.ndarray, dst: np.ndarray) -> _CellSet:
    """One 2-cell per extra parallel edge f: the walk src[f] -f-> dst[f] -r-> src[f], r the pair's first edge."""
    f, r = simple.extra, simple.extra_rep

    def write(nodes: np.ndarray, edges: np.ndarray, starts: np.ndarray) -> None:
        nodes[starts], nodes[starts + 1] = src[f], dst[f]
        edges[starts], edges[starts + 1] = f, r

    return _CellSet(f, np.full(len(f), 2, dtype=np.int64), write)


def _assemble(sets: list[_CellSet]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(generator, cell_ptr, flat nodes, flat edges) of all cells, ordered by generator edge."""
    gen = np.concatenate([c.gen for c in sets])
    lengths = np.concatenate([c.lengths for c in sets])
    order = np.argsort(gen, kind="stable")
    ptr = _offsets(lengths[order])
    starts = np.empty_like(gen)
    starts[order] = ptr[:-1]
    nodes, edges = np.empty(ptr[-1], dtype=np.int64), np.empty(ptr[-1], dtype=np.int64)
    offset = 0
    for c in sets:
        c.write(nodes, edges, starts[offset:offset + len(c.gen)])
        offset += len(c.gen)
    return gen[order], ptr, nodes, edges


def _minimum_basis_cells(simple: _SimpleGraph, src: np.ndarray, dst: np.ndarray, cap: int) -> _CellSet:
    """Minimum cycle basis of the simple graph: Horton candidates by length, kept when independent over GF(2).

    Candidate (x, k): the shortest paths from x to both ends of pair k plus the pair, when the two paths leave
    x through different neighbours (so the cycle is simple). A minimum basis lies among them (Horton, 1987).
    """
    adj = simple.adjacency(simple.lo, simple.hi)
    beta = len(simple.lo) - simple.n + _components_of(adj)[0]
    walks: list[tuple[int, list[int], list[int]]] = []
    if beta > 0:
        dist, pred = csgraph.shortest_path(adj, unweighted=True, return_predecessors=True)
        roots, pairs = _horton_candidates(simple, dist, _first_hops(pred), cap)
        pair_edge = _pred_pair_matrix(simple, pred)
        chosen = _greedy_independent(roots, pairs, simple, pred, pair_edge, beta)
        walks = [_horton_walk(x, k, simple, src, dst, pred, pair_edge) for x, k in chosen]

    def write(nodes: np.ndarray, edges: np.ndarray, starts: np.ndarray) -> None:
        for start, (_, walk_nodes, walk_edges) in zip(starts.tolist(), walks):
            nodes[start:start + len(walk_nodes)] = walk_nodes
            edges[start:start + len(walk_edges)] = walk_edges

    gen = np.array([wk[0] for wk in walks], dtype=np.int64)
    return _CellSet(gen, np.array([len(wk[1]) for wk in walks], dtype=np.int64), write)


def _first_hops(pred: np.ndarray) -> np.ndarray:
    """branch[x, y] = the neighbour of x on the shortest path x -> y (y itself at distance 1; -1 if none)."""
    n = pred.shape[0]
    rows = np.arange(n)[:, None] * n
    parent = pred.astype(np.int64)
    stop = (parent < 0) | (parent == np.arange(n)[:, None])  # x itself, unreachable, or a neighbour of x
    ptr = np.where(stop, np.arange(n * n).reshape(n, n), rows + parent).ravel()
    while True:
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    branch = (ptr % n).reshape(n, n)
    return np.where(parent < 0, -1, branch)


def _horton_candidates(simple: _SimpleGraph, dist: np.ndarray, branch: np.ndarray,
                       cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(root x, pair k) of the simple Horton cycles no longer than `cap`, shortest first."""
    ba, bb = branch[:, simple.lo], branch[:, simple.hi]
    length = dist[:, simple.lo] + dist[:, simple.hi] + 1
    ok = (ba >= 0) & (bb >= 0) & (ba != bb) & (length <= cap)
    roots, pairs = np.nonzero(ok)
    order = np.argsort(length[roots, pairs], kind="stable")
    return roots[order], pairs[order]


def _pred_pair_matrix(simple: _SimpleGraph, pred: np.ndarray) -> np.ndarray:
    """pair_edge[x, y] = index of the pair joining y to its predecessor on the shortest path from x (-1 if none)."""
    n = simple.n
    y = np.broadcast_to(np.arange(n), pred.shape)
    has = pred >= 0
    out = np.full(pred.shape, -1, dtype=np.int64)
    out[has] = simple.pair_of(y[has].astype(np.int64), pred[has].astype(np.int64))
    return out


def _tree_path(x: int, y: int, pred: np.ndarray, pair_edge: np.ndarray) -> tuple[list[int], list[int]]:
    """Nodes y, ..., x and the pairs between them on the shortest-path tree of x."""
    nodes, pairs = [y], []
    while y != x:
        pairs.append(int(pair_edge[x, y]))
        y = int(pred[x, y])
        nodes.append(y)
    return nodes, pairs


def _greedy_independent(roots: np.ndarray, pairs: np.ndarray, simple: _SimpleGraph, pred: np.ndarray,
                        pair_edge: np.ndarray, beta: int, chunk: int = 1 << 16) -> list[tuple[int, int]]:
    """Keep candidates whose pair sets are independent over GF(2) until rank beta.

    Vectors are Python ints used as bitsets, kept in echelon form. The same cycle comes
    from each of its nodes, so each distinct pair set is reduced once.
    """
    basis: dict[int, int] = {}
    seen: set[tuple[int, ...]] = set()
    chosen: list[tuple[int, int]] = []
    for begin in range(0, len(roots), chunk):
        for x, k in zip(roots[begin:begin + chunk].tolist(), pairs[begin:begin + chunk].tolist()):
            members = [k]
            for y in (int(simple.lo[k]), int(simple.hi[k])):
                members += _tree_path(x, y, pred, pair_edge)[1]
            key = tuple(sorted(members))
            if key in seen:
                continue
            seen.add(key)
            if _insert(basis, sum(1 << p for p in key)):
                chosen.append((x, k))
                if len(chosen) == beta:
                    return chosen
    return chosen


def _insert(basis: dict[int, int], vec: int) -> bool:
    """Reduce `vec` by the echelon `basis` (keyed by highest bit); add it and return True if it is independent."""
    while vec:
        top = vec.bit_length()
        row = basis.get(top)
        if row is None:
            basis[top] = vec
            return True
        vec ^= row
    return False


def _horton_walk(x: int, k: int, simple: _SimpleGraph, src: np.ndarray, dst: np.ndarray, pred: np.ndarray,
                 pair_edge: np.ndarray) -> tuple[int, list[int], list[int]]:
    """(generator, nodes, edges) of candidate (x, k) as a walk that starts with pair k's edge along its direction."""
    g = int(simple.rep[k])
    s, t = int(src[g]), int(dst[g])
    up_nodes, up_pairs = _tree_path(x, t, pred, pair_edge)
    down_nodes, down_pairs = _tree_path(x, s, pred, pair_edge)
    nodes = [s] + up_nodes + down_nodes[-2:0:-1]
    pairs = up_pairs + down_pairs[::-1]
    return g, nodes, [g] + simple.rep[pairs].tolist()


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """CSR pointer [0, l0, l0 + l1, ...]."""
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return ptr


def _edge_pairs_within_cells(ptr: np.ndarray, cell_edges: np.ndarray) -> np.ndarray:
    """Rows (edge a, edge b, cell) for every ordered pair a != b on a cell's boundary, cells grouped by length.

    The output is written in place, one block per distinct length (a Python loop over lengths, not cells).
    """
    lengths = np.diff(ptr)
    order = np.argsort(lengths, kind="stable")
    sizes, group_counts = np.unique(lengths, return_counts=True)
    out = np.empty((3, int((lengths * (lengths - 1)).sum())), dtype=np.int64)
    first_cell = offset = 0
    for size, count in zip(sizes.tolist(), group_counts.tolist()):
        ids = order[first_cell:first_cell + count]
        members = cell_edges[ptr[ids][:, None] + np.arange(size)]
        a, b = np.nonzero(~np.eye(size, dtype=bool))
        block = out[:, offset:offset + count * len(a)]
        np.take(members, a, axis=1, out=block[0].reshape(count, len(a)))
        np.take(members, b, axis=1, out=block[1].reshape(count, len(a)))
        block[2].reshape(count, len(a))[:] = ids[:, None]
        first_cell, offset = first_cell + count, offset + count * len(a)
    return out


def _pair_keys(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.minimum(a, b) * n + np.maximum(a, b)


def _csr(rows: np.ndarray, cols: np.ndarray, data: np.ndarray, size: int) -> sp.csr_array:
    """Square CSR matrix from coordinates (no duplicates), each row's columns in increasing order."""
    order = np.argsort(rows.astype(np.int64) * size + cols, kind="stable")
    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=size), out=indptr[1:])
    return sp.csr_array((data[order], cols[order], indptr), shape=(size, size))


def _components_of(adj: sp.csr_array) -> tuple[int, np.ndarray]:
    """Components of a symmetric adjacency (strong = weak there, and scipy's strong variant needs no transpose)."""
    return csgraph.connected_components(adj, directed=True, connection="strong")


def _components(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[int, np.ndarray]:
    rows, cols = np.concatenate([src, dst]), np.concatenate([dst, src])
    return _components_of(sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, n)))


def _node_edge_boundary(n: int, src: np.ndarray, dst: np.ndarray) -> sp.csc_array:
    """B1 with -1 at the source and +1 at the target; a self-loop's column is empty."""
    keep = src != dst
    lo, hi = np.minimum(src, dst)[keep], np.maximum(src, dst)[keep]
    sign_hi = np.where(src[keep] < dst[keep], 1, -1).astype(np.int32)
    rows = np.stack([lo, hi], 1).ravel()
    data = np.stack([-sign_hi, sign_hi], 1).ravel()
    return sp.csc_array((data, rows, _offsets(2 * keep)), shape=(n, len(src)))


def _cell_means(ptr: np.ndarray, nodes: np.ndarray, edges: np.ndarray, features: Tensor, n: int) -> Tensor:
    """Mean of each 2-cell's boundary node and edge rows of `features` (nodes first, then edges): one sparse mm."""
    num_cells, lengths = len(ptr) - 1, np.diff(ptr)
    if num_cells == 0:
        return features.new_zeros((0, features.shape[1]))
    cell = np.repeat(np.arange(num_cells), lengths)
    rows = np.concatenate([cell, cell])
    cols = np.concatenate([nodes, edges + n])
    values = torch.from_numpy(1.0 / (2.0 * lengths[rows])).to(features.dtype)
    matrix = torch.sparse_coo_tensor(torch.from_numpy(np.stack([rows, cols])), values,
                                     (num_cells, features.shape[0]), check_invariants=False)
    return torch.sparse.mm(matrix, features)


def _check_features(cc: CellComplex, node_emb: Tensor | None, edge_emb: Tensor | None) -> None:
    if node_emb is None or edge_emb is None:
        raise ValueError("give both node_emb and edge_emb (2-cell features average both), or neither")
    if node_emb.dim() != 2 or edge_emb.dim() != 2 or node_emb.shape[1] != edge_emb.shape[1]:
        raise ValueError(f"node_emb {tuple(node_emb.shape)} and edge_emb {tuple(edge_emb.shape)} must be 2-D "
                         "with the same feature size")
    if node_emb.shape[0] != cc.num_cells(0) or edge_emb.shape[0] != cc.num_cells(1):
        raise ValueError(f"expected {cc.num_cells(0)} node rows and {cc.num_cells(1)} edge rows, got "
                         f"{node_emb.shape[0]} and {edge_emb.shape[0]}")


def _check_options(num_nodes: int, tree: str, basis: str, max_cycle_len: int | None, parallel: str) -> None:
    if num_nodes == 0:
        raise ValueError("cannot lift a graph with no nodes: a cell complex needs at least one 0-cell")
    for name, value, allowed in (("tree", tree, TREES), ("basis", basis, BASES), ("parallel", parallel, PARALLEL)):
        if value not in allowed:
            raise ValueError(f"{name}={value!r}: expected one of {allowed}")
    if max_cycle_len is not None and max_cycle_len < 0:
        raise ValueError(f"max_cycle_len={max_cycle_len}: expected None or a non-negative int")


def _check_dim(dim: int, allowed: tuple[int, ...]) -> int:
    if dim not in allowed:
        raise ValueError(f"dim={dim}: expected one of {allowed}")
    return dim
