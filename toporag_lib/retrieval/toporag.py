"""TopoRAG's subcomplex retrieval (paper section 4.2, eq. 12-15, Algorithm 3).

Rank prizes k - r for the top-k0 0-cells and the top-k1 1-cells (eq. 13); every 2-cell's prize is the sum of its
boundary cells' prizes minus |boundary edges| * c2 (eq. 14); the top-k2 2-cells with a positive prize join the
PCST instance as virtual nodes tied to their boundary vertices at zero cost (prized edges join as in
G-Retriever); the solution is closed under the boundary, so it is a connected subcomplex (eq. 15).
"""

from __future__ import annotations

import numpy as np

from toporag_lib.retrieval import pcst
from toporag_lib.retrieval.prizes import cell_prizes, rank_prizes, top_k, unit_cosine
from toporag_lib.retrieval.subcomplex import Subcomplex, empty_ids
from toporag_lib.topology.complex import CellComplex, boundary_positions


def edge_index(cc: CellComplex) -> np.ndarray:
    """[2, E] int64 (source, target) of every edge."""
    return np.stack([cc.edge_src, cc.edge_dst]).astype(np.int64)


def toporag_retrieval(cc: CellComplex, q_emb, k0: int, k1: int, k2: int, c2: float,
             cost_e: float) -> Subcomplex:
    """Algorithm 3: X* = argmax over connected X' of the prizes of its cells minus cost(X') (eq. 15), with the
    prizes of eq. 13 (0- and 1-cells) and eq. 14 (2-cells), solved as a PCST; see the module docstring."""
    node_p = rank_prizes(unit_cosine(q_emb, cc.unit_features(0)), k0)
    edge_p = rank_prizes(unit_cosine(q_emb, cc.unit_features(1)), k1)
    cells, prizes2 = empty_ids(), np.empty(0, dtype=np.float32)
    if k2 > 0 and cc.num_cells(2):
        all_prizes = cell_prizes(node_p, edge_p, cc.cell_ptr, cc.cell_nodes, cc.cell_edges, c2)
        best = top_k(all_prizes, k2)
        cells = best[all_prizes[best] > 0]
        prizes2 = all_prizes[cells]
    if cc.num_cells(1) == 0:
        return Subcomplex(top_k(node_p, 1), empty_ids(), empty_ids())
    ptr = np.concatenate([[0], np.cumsum(cc.cell_lengths()[cells])]).astype(np.int64)
    members = cc.cell_nodes[boundary_positions(cc.cell_ptr, cells)]
    sol = pcst.solve(cc.num_nodes, edge_index(cc), node_p, edge_p, cost_e, cell_ids=cells, cell_prizes=prizes2,
                     cell_vertex_ptr=ptr, cell_vertices=members)
    nodes = sol.nodes if len(sol.nodes) or len(sol.edges) or len(sol.cells) else top_k(node_p, 1)
    return Subcomplex(nodes, sol.edges, sol.cells)
