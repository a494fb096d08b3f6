"""A minimum cycle basis (shortest cycles: triangles, squares) from Horton's candidates, by elimination over GF(2).

It needs O(|V|^2) memory and loops over candidates in Python (about 2 s on a WebQSP-sized graph): meant for small
and medium graphs (ExplaGraphs, SceneGraphs), not the default.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph

from toporag_lib.topology.simple_graph import CellSet, SimpleGraph, components_of


def minimum_basis_cells(simple: SimpleGraph, src: np.ndarray, dst: np.ndarray, cap: int) -> CellSet:
    """Minimum cycle basis of the simple graph: Horton candidates by length, kept when independent over GF(2).

    Candidate (x, k): the shortest paths from x to both ends of pair k plus the pair, when the two paths leave
    x through different neighbours (so the cycle is simple). A minimum basis lies among them (Horton, 1987).
    """
    adj = simple.adjacency(simple.lo, simple.hi)
    beta = len(simple.lo) - simple.n + components_of(adj)[0]
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
    return CellSet(gen, np.array([len(wk[1]) for wk in walks], dtype=np.int64), write)


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


def _horton_candidates(simple: SimpleGraph, dist: np.ndarray, branch: np.ndarray,
                       cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(root x, pair k) of the simple Horton cycles no longer than `cap`, shortest first."""
    ba, bb = branch[:, simple.lo], branch[:, simple.hi]
    length = dist[:, simple.lo] + dist[:, simple.hi] + 1
    ok = (ba >= 0) & (bb >= 0) & (ba != bb) & (length <= cap)
    roots, pairs = np.nonzero(ok)
    order = np.argsort(length[roots, pairs], kind="stable")
    return roots[order], pairs[order]


def _pred_pair_matrix(simple: SimpleGraph, pred: np.ndarray) -> np.ndarray:
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


def _greedy_independent(roots: np.ndarray, pairs: np.ndarray, simple: SimpleGraph, pred: np.ndarray,
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


def _horton_walk(x: int, k: int, simple: SimpleGraph, src: np.ndarray, dst: np.ndarray, pred: np.ndarray,
                 pair_edge: np.ndarray) -> tuple[int, list[int], list[int]]:
    """(generator, nodes, edges) of candidate (x, k) as a walk that starts with pair k's edge along its direction."""
    g = int(simple.rep[k])
    s, t = int(src[g]), int(dst[g])
    up_nodes, up_pairs = _tree_path(x, t, pred, pair_edge)
    down_nodes, down_pairs = _tree_path(x, s, pred, pair_edge)
    nodes = [s] + up_nodes + down_nodes[-2:0:-1]
    pairs = up_pairs + down_pairs[::-1]
    return g, nodes, [g] + simple.rep[pairs].tolist()
