"""B1, B2 and the message-passing index tensors of many complexes at once, cut out of shared buffers.

`lifting_many` lifts a disjoint union of graphs; here the boundary matrices and the four index tensors that
`CellComplex` builds on first use (`boundary`, `incidence_index`, `upper_adjacency_index`) are built for all of
its graphs with a few numpy passes, laid out graph after graph, so that each complex's copy is a slice: a
[rows, k] index tensor is a contiguous view of its graph's block (empty ones are one shared tensor per batch), and
a boundary matrix is assembled from slices without scipy's format check (the constructor's checks cost more than
the rest of a small graph's lift).
Every value equals what the lazy builders in `complex.py` give for the complex alone (tests check this).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from torch import from_numpy

from toporag_lib.topology.simple_graph import offsets

_CSC_FIELDS = vars(sp.csc_array((np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(1, np.int64)), shape=(0, 0)))
_CSC_FAST = set(_CSC_FIELDS) == {"_shape", "maxprint", "data", "indices", "indptr"}  # else scipy changed: check
_MAXPRINT = _CSC_FIELDS.get("maxprint")


class Layout(NamedTuple):
    """Where each graph's items sit in the union's flat arrays (all local ids, i.e. counted within the graph).

    `node_ptr`, `edge_ptr`, `cell_ptr`, `pos_ptr` are per-graph offsets of nodes, edges, 2-cells and boundary
    positions; `local_cell_ptr` holds each graph's own 2-cell pointer, graph g's at `cell_ptr[g] + g` onwards.
    """

    node_ptr: np.ndarray
    edge_ptr: np.ndarray
    cell_ptr: np.ndarray
    pos_ptr: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    walk_ptr: np.ndarray
    local_cell_ptr: np.ndarray
    walk_nodes: np.ndarray
    walk_edges: np.ndarray
    cell_graph: np.ndarray


class Blocks(NamedTuple):
    """[rows, k_g] arrays of all graphs in one buffer, graph after graph, each graph's rows consecutive: graph g's
    array is `flat[bounds[g]:bounds[g + 1]].reshape(rows, widths[g])`."""

    flat: np.ndarray
    bounds: list[int]
    widths: list[int]
    rows: int


def local_ptr(ptr: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """Each block's own CSR pointer, block after block: block g (items blocks[g]..blocks[g + 1] of the global
    pointer `ptr`) takes positions blocks[g] + g .. blocks[g + 1] + g, counted from the block's first item."""
    graph = np.repeat(np.arange(len(blocks) - 1), np.diff(blocks) + 1)
    return ptr[np.arange(len(graph)) - graph] - ptr[blocks[:-1]][graph]


def unchecked_csc(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> sp.csc_array:
    """`sp.csc_array((data, indices, indptr), shape=shape)` without the format check (valid input only), unless
    this scipy's csc_array holds other attributes than the ones set here."""
    if not _CSC_FAST:
        return sp.csc_array((data, indices, indptr), shape=shape)
    matrix = object.__new__(sp.csc_array)
    matrix.__dict__ = {"_shape": shape, "maxprint": _MAXPRINT, "indices": indices, "indptr": indptr, "data": data}
    return matrix


def index_memos(lay: Layout, signs: np.ndarray, cell_edges: list[np.ndarray], cell_ptrs: list[np.ndarray]
                ) -> list[dict]:
    """Per graph, the memo a `CellComplex` fills on first use: B1, B2, inc1, inc2, adj0, adj1. `cell_edges` and
    `cell_ptrs` are the complexes' own arrays, which B2 shares as the lazy builder does."""
    edge_graph = np.repeat(np.arange(len(lay.edge_ptr) - 1), np.diff(lay.edge_ptr))
    loops = lay.src == lay.dst
    b1_data, b1_rows, b1_ptr = _node_edge_boundary(lay, loops)
    b1_bounds = b1_ptr[lay.edge_ptr]
    b1 = [pieces(a, b1_bounds[:-1], b1_bounds[1:]) for a in (b1_data, b1_rows)]
    b1.append(pieces(local_ptr(b1_ptr, lay.edge_ptr), *own_ptr_bounds(lay.edge_ptr)))
    b2_data = pieces(signs.astype(np.int32), lay.pos_ptr[:-1], lay.pos_ptr[1:])
    empty = {rows: torch.empty(rows, 0, dtype=torch.long) for rows in (2, 3)}  # shared: most small graphs have
    tensors = [[from_numpy(b.flat[x0:x1].reshape(b.rows, k)) if k else empty[b.rows]  # no 2-cells, hence empty
                for x0, x1, k in zip(b.bounds, b.bounds[1:], b.widths)] for b in (_node_edge_index(lay, loops, edge_graph), _edge_cell_index(lay),
                         _node_adjacency(lay, loops, edge_graph), _edge_adjacency(lay))]
    sizes = [np.diff(ptr).tolist() for ptr in (lay.node_ptr, lay.edge_ptr, lay.cell_ptr)]
    return [{"B1": unchecked_csc(d1, r1, q1, (n, m)), "B2": unchecked_csc(d2, r2, q2, (m, c)),
             "inc1": inc1, "inc2": inc2, "adj0": adj0, "adj1": adj1}
            for n, m, c, d1, r1, q1, d2, r2, q2, inc1, inc2, adj0, adj1
            in zip(*sizes, *b1, b2_data, cell_edges, cell_ptrs, *tensors)]


def own_ptr_bounds(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each graph's own pointer sits in `local_ptr(ptr, blocks)`: starts and ends."""
    starts = blocks[:-1] + np.arange(len(blocks) - 1)
    return starts, starts + np.diff(blocks) + 1


def pieces(array: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[np.ndarray]:
    """[array[starts[g]:ends[g]] for every g] (views)."""
    return [array[a:b] for a, b in zip(starts.tolist(), ends.tolist())]


def _node_edge_boundary(lay: Layout, loops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """B1's data, rows and global column pointer: -1 at the source, +1 at the target, nothing for a self-loop."""
    keep = ~loops
    lo, hi = np.minimum(lay.src, lay.dst)[keep], np.maximum(lay.src, lay.dst)[keep]
    sign_hi = np.where(lay.src[keep] < lay.dst[keep], 1, -1).astype(np.int32)
    return np.stack([-sign_hi, sign_hi], 1).ravel(), np.stack([lo, hi], 1).ravel(), offsets(2 * keep)


def _node_edge_index(lay: Layout, loops: np.ndarray, edge_graph: np.ndarray) -> Blocks:
    """(node, edge): both ends of every edge, a self-loop's node once."""
    nodes = np.stack([lay.src, lay.dst], 1).ravel()
    edges = np.repeat(np.arange(len(lay.src)) - lay.edge_ptr[edge_graph], 2)
    keep = ~np.stack([np.zeros_like(loops), loops], 1).ravel()
    return _blocks(np.stack([nodes[keep], edges[keep]]), offsets(2 - loops)[lay.edge_ptr])


def _edge_cell_index(lay: Layout) -> Blocks:
    """(edge, 2-cell): the nonzeros of B2."""
    local_cell = np.arange(len(lay.cell_graph)) - lay.cell_ptr[lay.cell_graph]
    return _blocks(np.stack([lay.walk_edges, np.repeat(local_cell, np.diff(lay.walk_ptr))]), lay.pos_ptr)


def _node_adjacency(lay: Layout, loops: np.ndarray, edge_graph: np.ndarray) -> Blocks:
    """(a, b, edge) for every non-loop edge, per graph all edges forwards, then all backwards."""
    ids = np.flatnonzero(~loops)
    graph = edge_graph[ids]
    col_ptr = 2 * offsets(np.bincount(graph, minlength=len(lay.edge_ptr) - 1))
    forward = np.arange(len(ids)) + col_ptr[graph] // 2
    backward = forward + (col_ptr[graph + 1] - col_ptr[graph]) // 2
    columns = np.empty((3, 2 * len(ids)), dtype=np.int64)
    a, b, local = lay.src[ids], lay.dst[ids], ids - lay.edge_ptr[graph]
    columns[:, forward], columns[:, backward] = (a, b, local), (b, a, local)
    return _blocks(columns, col_ptr)


def _edge_adjacency(lay: Layout) -> Blocks:
    """(edge a, edge b, 2-cell) for every ordered pair a != b on a 2-cell's boundary; within each graph the cells
    come grouped by length, shortest first, as `complex._edge_pairs_within_cells` orders them."""
    lengths = np.diff(lay.walk_ptr)
    pairs = lengths * (lengths - 1)
    col_ptr = offsets(pairs)[lay.cell_ptr]
    order = np.lexsort((lengths, lay.cell_graph))
    start = np.empty_like(pairs)
    start[order] = np.cumsum(pairs[order]) - pairs[order]
    width = np.diff(col_ptr)[lay.cell_graph]
    base = start + 2 * col_ptr[lay.cell_graph]  # where the cell's first column sits in the flat 3-row buffer
    local_cell = np.arange(len(lengths)) - lay.cell_ptr[lay.cell_graph]
    flat = np.empty(3 * int(col_ptr[-1]), dtype=np.int64)
    by_length = np.argsort(lengths, kind="stable")
    sizes, counts = np.unique(lengths, return_counts=True)
    for size, first, count in zip(sizes.tolist(), (np.cumsum(counts) - counts).tolist(), counts.tolist()):
        ids = by_length[first:first + count]
        members = lay.walk_edges[lay.walk_ptr[ids][:, None] + np.arange(size)]
        a, b = np.nonzero(~np.eye(size, dtype=bool))
        dest, stride = base[ids][:, None] + np.arange(len(a)), width[ids][:, None]
        flat[dest] = members[:, a]
        dest += stride
        flat[dest] = members[:, b]
        dest += stride
        flat[dest] = local_cell[ids][:, None]
    return _bounds(flat, col_ptr, 3)


def _blocks(columns: np.ndarray, col_ptr: np.ndarray) -> Blocks:
    """Lay out `columns` ([rows, K], graph g owning columns col_ptr[g]..col_ptr[g + 1]) graph after graph."""
    rows, width = columns.shape[0], np.diff(col_ptr)
    dest, stride = np.arange(columns.shape[1]) + np.repeat((rows - 1) * col_ptr[:-1], width), np.repeat(width, width)
    flat = np.empty(columns.size, dtype=columns.dtype)
    for row in columns:
        flat[dest] = row
        dest += stride
    return _bounds(flat, col_ptr, rows)


def _bounds(flat: np.ndarray, col_ptr: np.ndarray, rows: int) -> Blocks:
    return Blocks(flat, (rows * col_ptr).tolist(), np.diff(col_ptr).tolist(), rows)
