"""TopoRAG's subcomplex retrieval (paper section 4.2, eq. 12-15, Algorithm 3), with its construction choices named.

Prizes. 0-cells: rank prizes k0 - r for the top-k0 by cos(z_q, z^0) (eq. 13). 1-cells (`prizes`): rank prizes k1 - r
for the top-k1 by cos(z_q, z^1) ("rank", eq. 13), or G-Retriever's ("gretriever": the top-k1 *distinct* similarity
values, ties sharing a level's prize, and its lowered edge cost), so that with k2 = 0 TopoRAG retrieves exactly
G-Retriever's subgraph. 2-cells: the sum of their boundary cells' prizes minus |boundary edges| * c2 (eq. 14).

Which 2-cells enter the PCST (`cells`): the top-k2 with a positive prize ("top_k"; ranked by that prize, or by
cos(z_q, z^2) of eq. 12 with `cell_rank="similarity"`), or every 2-cell with a positive prize ("all", as Algorithm
3 keeps every 2-cell's prize; k2 = 0 still means none). How a 2-cell joins the PCST instance (`cell_cost`): as a
virtual node with its prize tied to each boundary vertex at zero cost ("free", a hub through which the tree may
pass without paying edges), or as a leaf tied to its first boundary vertex by one edge that costs its boundary
edges, |boundary| * cost_e ("boundary": choosing a 2-cell pays for the edges the closure adds). Prized edges join as
in G-Retriever (virtual nodes for edges whose prize exceeds the edge cost). The PCST is unrooted with 'gw' pruning;
its solution is closed under the boundary, so the result is a connected subcomplex (eq. 15).

`config.PAPER_ALGORITHM_3` names the literal reading (every 2-cell, paying for its boundary); the defaults are chosen by
the evidence-recall measurements of notebook 03 (`toporag_lib.retrieval.retrieval_config`).
"""

from __future__ import annotations

import numpy as np

from toporag_lib.retrieval import pcst
from toporag_lib.retrieval.prizes import (
    cell_prizes,
    gretriever_edge_prizes,
    rank_prizes,
    top_k,
    unit_cosine,
)
from toporag_lib.retrieval.subcomplex import Subcomplex, empty_ids
from toporag_lib.topology.complex import CellComplex, boundary_positions

PRIZES = ("rank", "gretriever")
CELLS = ("top_k", "all")
CELL_RANKS = ("prize", "similarity")
CELL_COSTS = ("free", "boundary")


def positive_cell_prizes(cc: CellComplex, node_prizes: np.ndarray, edge_prizes: np.ndarray,
                         c2: float) -> tuple[np.ndarray, np.ndarray]:
    """The 2-cells whose eq. 14 prize is positive, ascending, with their prizes. With C2 >= 0 only a 2-cell with a
    prized boundary node or edge can have one, so only those are scored (the same float32 values as scoring all)."""
    candidates = np.union1d(cc.cells_containing(0, np.flatnonzero(node_prizes)),
                            cc.cells_containing(1, np.flatnonzero(edge_prizes)))
    positions = boundary_positions(cc.cell_ptr, candidates)
    ptr = np.concatenate([[0], np.cumsum(cc.cell_lengths()[candidates])]).astype(np.int64)
    prizes = cell_prizes(node_prizes, edge_prizes, ptr, cc.cell_nodes[positions], cc.cell_edges[positions], c2)
    positive = prizes > 0
    return candidates[positive], prizes[positive]


def toporag_retrieval(cc: CellComplex, q_emb, k0: int, k1: int, k2: int, c2: float, cost_e: float, prizes: str,
                      cells: str, cell_rank: str, cell_cost: str) -> Subcomplex:
    """Algorithm 3: X* = argmax over connected X' of the prizes of its cells minus cost(X') (eq. 15), with the
    prizes of eq. 13 (0- and 1-cells) and eq. 14 (2-cells), solved as a PCST; see the module docstring."""
    node_p = rank_prizes(unit_cosine(q_emb, cc.unit_features(0)), k0)
    if cc.num_cells(1) == 0:
        return Subcomplex(top_k(node_p, 1), empty_ids(), empty_ids())
    edge_sim = unit_cosine(q_emb, cc.unit_features(1))
    edge_p, cost = (gretriever_edge_prizes(edge_sim, k1, cost_e) if prizes == "gretriever"
                    else (rank_prizes(edge_sim, k1), cost_e))
    chosen, prizes2 = empty_ids(), np.empty(0, dtype=np.float32)
    if k2 > 0 and cc.num_cells(2) and cell_rank == "similarity" and cells == "top_k":
        all_prizes = cell_prizes(node_p, edge_p, cc.cell_ptr, cc.cell_nodes, cc.cell_edges, c2)
        best = top_k(unit_cosine(q_emb, cc.unit_features(2)), k2)
        chosen = best[all_prizes[best] > 0]
        prizes2 = all_prizes[chosen]
    elif k2 > 0 and cc.num_cells(2):
        chosen, prizes2 = positive_cell_prizes(cc, node_p, edge_p, c2)
        if cells == "top_k":
            best = top_k(prizes2, k2)
            chosen, prizes2 = chosen[best], prizes2[best]
    lengths = cc.cell_lengths()[chosen]
    members = cc.cell_nodes[boundary_positions(cc.cell_ptr, chosen)]
    if cell_cost == "boundary":  # one spoke per 2-cell, to its first boundary vertex, costing its boundary
        ptr = np.arange(len(chosen) + 1, dtype=np.int64)
        vertices = cc.cell_nodes[cc.cell_ptr[chosen]]
        spoke_costs = lengths.astype(np.float64) * cost
    else:
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        vertices, spoke_costs = members, None
    sol = pcst.solve(cc.num_nodes, cc.edge_index(), node_p, edge_p, cost, cell_ids=chosen, cell_prizes=prizes2,
                     cell_vertex_ptr=ptr, cell_vertices=vertices, cell_spoke_costs=spoke_costs)
    nodes = sol.nodes if len(sol.nodes) or len(sol.edges) or len(sol.cells) else top_k(node_p, 1)
    return Subcomplex(nodes, sol.edges, sol.cells)
