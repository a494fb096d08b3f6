"""Prize schemes for subcomplex retrieval: similarity ranks for 0/1-cells, boundary sums for 2-cells.

All similarities and prizes are float32 numpy arrays, as G-Retriever computes them in torch.
"""

from __future__ import annotations

import numpy as np
import torch

GRETRIEVER_DECAY = 0.01  # G-Retriever's `c`: tied edge prizes decay by this factor


def unit_cosine(query: torch.Tensor | np.ndarray, unit_features: torch.Tensor) -> np.ndarray:
    """cos(z_q, z_x) of paper eq. 12, for rows already scaled to unit length (see `CellComplex.unit_features`).

    One dot product per row (`np.einsum`), not a BLAS matrix-vector product: sgemv rounds rows differently by
    position (equal rows of 384 floats come out up to 1e-8 apart), which broke the ties between equal edge texts
    that G-Retriever's prizes share; einsum sums every row in the same order, so equal rows give equal values. It
    runs on one thread, at about twice the speed of torch's product and row sum, whose threads wait on a busy core."""
    q = torch.nn.functional.normalize(torch.as_tensor(query, dtype=torch.float32).reshape(-1), dim=0, eps=1e-8)
    return np.einsum("nd,d->n", unit_features.numpy(), q.numpy())


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """TopK of paper eq. 12: indices of the k highest scores, best first; ties broken by the lower index.

    Exactly `np.argsort(-scores, kind="stable")[:k]`, in linear time: only the scores at or above the k-th highest
    (ties at the threshold included, so the lower indices win) are sorted."""
    k = min(k, len(scores))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    negated = -scores
    if k >= len(scores) or np.isnan(negated).any():
        return np.argsort(negated, kind="stable")[:k]
    threshold = np.partition(negated, k - 1)[k - 1]
    candidates = np.flatnonzero(negated <= threshold)
    return candidates[np.argsort(negated[candidates], kind="stable")[:k]]


def rank_prizes(scores: np.ndarray, k: int) -> np.ndarray:
    """Paper eq. 13 (and G-Retriever's node prizes): the r-th best of the top-k gets k - r, the rest 0.

    With fewer than k cells, k shrinks to their number (as G-Retriever does).
    """
    prizes = np.zeros(len(scores), dtype=np.float32)
    best = top_k(scores, k)
    prizes[best] = np.arange(len(best), 0, -1, dtype=np.float32)
    return prizes


def gretriever_edge_prizes(scores: np.ndarray, k: int, cost_e: float) -> tuple[np.ndarray, float]:
    """G-Retriever's edge prizes over the top-k *unique* similarity values, and its adjusted edge cost.

    Edges sharing a value split its prize; each level is capped just below the previous one. The cost is lowered
    so that at least one edge can be chosen. Replicates PyTorch Geometric's `retrieval_via_pcst` step by step.
    """
    c = GRETRIEVER_DECAY
    prizes = np.asarray(scores, dtype=np.float32).copy()
    if k <= 0 or len(prizes) == 0:
        return np.zeros(len(prizes), dtype=np.float32), cost_e
    values = np.unique(prizes)[::-1]
    k = min(k, len(values))
    values = values[:k]
    prizes[prizes < values[-1]] = 0.0
    last = float(k)
    for level in range(k):
        hit = prizes == values[level]
        value = min(float(np.float32((k - level) / hit.sum())), last - c)
        prizes[hit] = value
        last = value * (1 - c)
    return prizes, min(cost_e, float(prizes.max()) * (1 - c / 2))


def cell_prizes(node_prizes: np.ndarray, edge_prizes: np.ndarray, cell_ptr: np.ndarray, cell_nodes: np.ndarray,
                cell_edges: np.ndarray, c2: float) -> np.ndarray:
    """Paper eq. 14 for all 2-cells at once: boundary 0- and 1-cell prizes summed, minus |boundary edges| * C2.

    The boundaries come in CSR form (B2's column pointers and row indices, plus each cell's boundary nodes), so
    this is one gather and one segmented sum, with no loop over cycles.
    """
    lengths = np.diff(cell_ptr)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    member = node_prizes[cell_nodes].astype(np.float64) + edge_prizes[cell_edges].astype(np.float64)
    total = np.bincount(owner, weights=member, minlength=len(lengths))
    return (total - c2 * lengths).astype(np.float32)
