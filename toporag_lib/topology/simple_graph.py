"""The simple graph under a multigraph, and the array helpers the lifting shares (pair keys, CSR, components).

A `CellSet` is one kind of 2-cells (fundamental cycles, minimum-basis cycles, digons) before they are assembled
into a `CellComplex`'s flat boundary arrays.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph


class SimpleGraph(NamedTuple):
    """The simple graph under a multigraph: pair k = (lo[k] < hi[k]) is stood for by edge rep[k]."""

    n: int
    lo: np.ndarray
    hi: np.ndarray
    keys: np.ndarray
    rep: np.ndarray
    extra: np.ndarray
    extra_rep: np.ndarray

    @classmethod
    def build(cls, n: int, src: np.ndarray, dst: np.ndarray) -> SimpleGraph:
        ids = np.flatnonzero(src != dst)
        keys = pair_keys(n, src[ids], dst[ids])
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        rep = ids[first]
        extra = rep[inverse] != ids
        return cls(n, uniq // n, uniq % n, uniq, rep, ids[extra], rep[inverse][extra])

    def pair_of(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Index of the pair {a, b} (both must be joined)."""
        return np.searchsorted(self.keys, pair_keys(self.n, a, b))

    def adjacency(self, lo: np.ndarray, hi: np.ndarray, extra_nodes: int = 0) -> sp.csr_array:
        """Symmetric float adjacency (the dtype csgraph works in) with `extra_nodes` isolated nodes appended."""
        rows, cols = np.concatenate([lo, hi]), np.concatenate([hi, lo])
        return csr(rows, cols, np.ones(len(rows)), self.n + extra_nodes)


class CellSet(NamedTuple):
    """2-cells of one kind: the edge that made each, its length, and a writer of their walks into flat arrays.

    `write(nodes, edges, starts)` puts cell i's walk at `nodes[starts[i]:starts[i] + lengths[i]]` (same for edges).
    """

    gen: np.ndarray
    lengths: np.ndarray
    write: Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def pair_keys(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.minimum(a, b) * n + np.maximum(a, b)


def csr(rows: np.ndarray, cols: np.ndarray, data: np.ndarray, size: int) -> sp.csr_array:
    """Square CSR matrix from coordinates (no duplicates), each row's columns in increasing order."""
    order = np.argsort(rows.astype(np.int64) * size + cols, kind="stable")
    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=size), out=indptr[1:])
    return sp.csr_array((data[order], cols[order], indptr), shape=(size, size))


def components_of(adj: sp.csr_array) -> tuple[int, np.ndarray]:
    """Components of a symmetric adjacency (strong = weak there, and scipy's strong variant needs no transpose)."""
    return csgraph.connected_components(adj, directed=True, connection="strong")


def offsets(lengths: np.ndarray) -> np.ndarray:
    """CSR pointer [0, l0, l0 + l1, ...]."""
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return ptr
