"""Fundamental cycles (paper Algorithm 2): a spanning forest, and the cycle each non-tree edge closes.

All fundamental cycles are traced at once with numpy: a binary-lifting LCA for all non-tree edges, then one
vectorized step per tree level climbs from both ends of every cycle, writing straight into flat CSR-style
arrays. The cost is O(|E| log |E| + total cycle length), with no Python loop over cycles or their members.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from toporag_lib.topology.simple_graph import CellSet, SimpleGraph, components_of, csr


class Forest(NamedTuple):
    """A rooted spanning forest: `up[j][x]` is x's 2^j-th ancestor (up[0] the parent; a root is its own parent),
    `parent_edge[x]` the tree edge to x's parent (-1 at roots)."""

    parent_edge: np.ndarray
    depth: np.ndarray
    up: list[np.ndarray]


def spanning_forest(simple: SimpleGraph, tree: str, seed: int, node_graph: np.ndarray | None = None) -> Forest:
    """BFS, DFS or random spanning forest, each component rooted at its smallest node.

    The random tree weighs the simple graph's k-th pair with `1 + default_rng(seed).random(...)[k]`; when
    `node_graph` (sorted: node -> graph) marks a disjoint union, k counts from each graph's first pair instead.
    """
    n = simple.n
    adj = simple.adjacency(simple.lo, simple.hi, 1)  # node n: a virtual root, isolated for now
    roots = np.unique(components_of(adj)[1][:n], return_index=True)[1]
    if tree == "random":
        weights = _tree_weights(simple, seed, node_graph)
        mst = csgraph.minimum_spanning_tree(csr(simple.lo, simple.hi, weights, n)).tocoo()
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
    return Forest(parent_edge, depth, up)


def _tree_weights(simple: SimpleGraph, seed: int, node_graph: np.ndarray | None) -> np.ndarray:
    rank = np.arange(len(simple.lo))
    if node_graph is not None:  # pairs are sorted by their smaller node, hence by graph
        graph = node_graph[simple.lo]
        rank -= np.searchsorted(graph, graph)
    return 1.0 + np.random.default_rng(seed).random(int(rank.max(initial=-1)) + 1)[rank]


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


def _lowest_common_ancestor(forest: Forest, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vectorized binary-lifting LCA of pairs in the same tree."""
    da, db = forest.depth[a], forest.depth[b]
    a, b = np.where(da >= db, a, b), np.where(da >= db, b, a)
    a = _kth_ancestor(forest.up, a, np.abs(da - db))
    for table in reversed(forest.up):
        ta, tb = table[a], table[b]
        move = ta != tb
        a, b = np.where(move, ta, a), np.where(move, tb, b)
    return np.where(a == b, a, forest.up[0][a])


def fundamental_cells(forest: Forest, simple: SimpleGraph, src: np.ndarray, dst: np.ndarray,
                       tree_mask: np.ndarray, cap: int) -> CellSet:
    """Algorithm 2 for all non-tree edges at once: the fundamental cycle of every non-tree simple edge g = s -> t
    (its tree path plus g, eq. 10's 2-cell x_g), when no longer than `cap`."""
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

    return CellSet(gen, length, write)


def _climb(forest: Forest, low: np.ndarray, steps: np.ndarray, at: np.ndarray, stride: int, nodes: np.ndarray,
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
