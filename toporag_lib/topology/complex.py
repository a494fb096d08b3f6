"""The cell complex: 0-cells (nodes), 1-cells (edges) and 2-cells (closed walks), with signed boundary matrices.

Orientation. B1[src, j] = -1 and B1[dst, j] = +1. A 2-cell's boundary is stored as a closed walk that starts
with the edge that made it, along that edge's direction: nodes v_0 = its source, v_1 = its target, ...; edge
i joins v_i and v_{i+1 mod L}, with sign +1 when it points from v_i to v_{i+1}, else -1. B2 holds those signs,
so B1 @ B2 = 0. How a graph becomes a complex is `toporag_lib.topology.lifting`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from toporag_lib.topology.simple_graph import components_of, offsets, pair_keys

__all__ = ["Cell", "CellComplex", "boundary_positions", "closure"]

_BOUNDARY_KEYS, _INCIDENCE_KEYS, _ADJACENCY_KEYS = {1: "B1", 2: "B2"}, {1: "inc1", 2: "inc2"}, {0: "adj0", 1: "adj1"}


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
    Boundary matrices and index tensors are built on first use and cached (`lift_many` builds them in bulk): do
    not modify them in place.
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

    @classmethod
    def unchecked(cls, *values: object) -> CellComplex:
        """`CellComplex(*values)` (every field, in order) without the frozen dataclass's __init__, which costs as
        much as the rest of a small complex (`lift_many` makes thousands)."""
        cc = object.__new__(cls)
        cc.__dict__.update(zip(_FIELD_NAMES, values))
        return cc

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
        """Signed boundary matrix: B1 (|V| x |E|) for dim 1, B2 (|E| x |2-cells|) for dim 2; int32 CSC. B1 @ B2 = 0."""
        built = self._memo.get(_BOUNDARY_KEYS.get(dim))  # the fast path: `build_all`-style loops call this a lot
        if built is not None:
            return built
        if _check_dim(dim, (1, 2)) == 1:
            return self._cached("B1", lambda: _node_edge_boundary(self.num_nodes, self.edge_src, self.edge_dst))
        return self._cached("B2", self._edge_cell_boundary)

    def incidence_index(self, dim: int) -> Tensor:
        """Face-coface pairs as a [2, nnz] long tensor: (node, edge) for dim 1, (edge, 2-cell) for dim 2.

        Dim 1 lists both ends of every edge and a self-loop's node once; dim 2 is exactly the nonzeros of B2.
        """
        built = self._memo.get(_INCIDENCE_KEYS.get(dim))
        if built is not None:
            return built
        if _check_dim(dim, (1, 2)) == 1:
            return self._cached("inc1", self._node_edge_index)
        return self._cached("inc2", lambda: torch.from_numpy(np.stack([self.cell_edges, self._cell_of_position()])))

    def upper_adjacency_index(self, dim: int) -> Tensor:
        """Upper adjacency through a shared coface as a [3, m] long tensor (a, b, coface), both directions.

        Dim 0: nodes joined by a (non-loop) edge. Dim 1: two edges on the boundary of the same 2-cell; this has
        sum(L * (L - 1)) columns over the 2-cells' lengths L, so it is built on first use only.
        """
        built = self._memo.get(_ADJACENCY_KEYS.get(dim))
        if built is not None:
            return built
        if _check_dim(dim, (0, 1)) == 0:
            return self._cached("adj0", self._node_adjacency)
        return self._cached("adj1", self._edge_adjacency)

    def with_features(self, node_emb: Tensor, edge_emb: Tensor) -> CellComplex:
        """Attach Z0 = node_emb, Z1 = edge_emb and Z2 = mean of each 2-cell's boundary 0- and 1-cell features
        (Algorithm 1, lines 16-28: z_e^2 = MEAN{z_x : x in the boundary of x_e^2})."""
        _check_features(self, node_emb, edge_emb)
        z2 = _cell_means(self.cell_ptr, self.cell_nodes, self.cell_edges, torch.cat([node_emb, edge_emb]),
                         self.num_nodes)
        topology = {k: v for k, v in self._memo.items() if not k.startswith("unit")}  # features changed
        return replace(self, z0=node_emb, z1=edge_emb, z2=z2, _memo=topology)

    def edge_index(self) -> np.ndarray:
        """[2, E] int64 (source, target) of every edge."""
        return np.stack([self.edge_src, self.edge_dst]).astype(np.int64)

    def skeleton(self) -> sp.csr_array:
        """The undirected 1-skeleton as an [N, N] 0/1 adjacency matrix (float64, for `scipy.sparse.csgraph`),
        computed once."""
        def build() -> sp.csr_array:
            ones = np.ones(len(self.edge_src))
            adj = sp.csr_array((ones, (self.edge_src, self.edge_dst)), shape=(self.num_nodes, self.num_nodes))
            return ((adj + adj.T) > 0).astype(np.float64)
        return self._cached("skeleton", build)

    def unit_features(self, dim: int) -> Tensor:
        """Z0, Z1 or Z2 with rows scaled to unit length (float32), computed once: cosine similarity is a matmul."""
        z = (self.z0, self.z1, self.z2)[_check_dim(dim, (0, 1, 2))]
        if z is None:
            raise ValueError("the cell complex has no features: lift(graph, node_emb, edge_emb) first")
        return self._cached(f"unit{dim}", lambda: torch.nn.functional.normalize(z.float(), dim=-1, eps=1e-8))

    def summary(self) -> dict:
        """Counts and cycle-length statistics, plus the lifting options."""
        lengths = self.cell_lengths()
        loops = self.edge_src == self.edge_dst
        simple_pairs = len(np.unique(pair_keys(self.num_nodes, self.edge_src[~loops], self.edge_dst[~loops])))
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

    def cells_containing(self, dim: int, ids: np.ndarray) -> np.ndarray:
        """The 2-cells whose boundary holds any of the given nodes (dim 0) or edges (dim 1), ascending, each once."""
        dim = _check_dim(dim, (0, 1))
        ptr, cells = self._cached(f"cells_of{dim}", lambda: self._cells_of(dim))
        ids = np.asarray(ids, dtype=np.int64)
        return np.unique(cells[boundary_positions(ptr, ids)])

    def _cells_of(self, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """CSR from each node (dim 0) or edge (dim 1) to the 2-cells whose boundary holds it."""
        members, count = (self.cell_nodes, self.num_nodes) if dim == 0 else (self.cell_edges, self.num_cells(1))
        order = np.argsort(members, kind="stable")
        ptr = np.concatenate([[0], np.cumsum(np.bincount(members, minlength=count))]).astype(np.int64)
        return ptr, self._cell_of_position()[order]

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


_FIELD_NAMES = tuple(f.name for f in fields(CellComplex))


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


def _components(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[int, np.ndarray]:
    rows, cols = np.concatenate([src, dst]), np.concatenate([dst, src])
    return components_of(sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, n)))


def _node_edge_boundary(n: int, src: np.ndarray, dst: np.ndarray) -> sp.csc_array:
    """B1 with -1 at the source and +1 at the target; a self-loop's column is empty."""
    keep = src != dst
    lo, hi = np.minimum(src, dst)[keep], np.maximum(src, dst)[keep]
    sign_hi = np.where(src[keep] < dst[keep], 1, -1).astype(np.int32)
    rows = np.stack([lo, hi], 1).ravel()
    data = np.stack([-sign_hi, sign_hi], 1).ravel()
    return sp.csc_array((data, rows, offsets(2 * keep)), shape=(n, len(src)))


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
    for name, emb in (("node_emb", node_emb), ("edge_emb", edge_emb)):
        bad = (~torch.isfinite(emb)).any(dim=1).nonzero().flatten().tolist()
        if bad:
            raise ValueError(f"{name} has non-finite values (NaN or inf) in {len(bad)} rows, e.g. row {bad[0]}")


def _check_dim(dim: int, allowed: tuple[int, ...]) -> int:
    if dim not in allowed:
        raise ValueError(f"dim={dim}: expected one of {allowed}")
    return dim
