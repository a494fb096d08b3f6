"""Prize-collecting Steiner tree over a graph whose prized edges and 2-cells become virtual nodes.

G-Retriever's construction, generalised to cell complexes: an edge whose prize exceeds `cost_e` becomes a virtual
node with prize (prize - cost_e) joined to its two ends by zero-cost edges; every other edge costs
(cost_e - prize). A prized 2-cell becomes a virtual node with its prize, joined to each of its boundary vertices
at zero cost (or, with spoke costs, tied to some of them at a cost). One unrooted tree, 'gw' pruning (pcst_fast). The instance is built with numpy, no Python loop over
edges; the order of the solver's edges is G-Retriever's (real edges, then each virtual node's pair of edges), so
that its answers match PyTorch Geometric's `retrieval_via_pcst` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pcst_fast import pcst_fast


@dataclass(frozen=True)
class PCSTSolution:
    """What the solver picked, in the input's own indices (before any closure)."""

    nodes: np.ndarray  # real nodes in the tree
    edges: np.ndarray  # edges used as tree edges or chosen as virtual nodes
    cells: np.ndarray  # 2-cells chosen as virtual nodes (indices into the `cells` argument's ids)


@dataclass(frozen=True)
class PCSTInstance:
    """The solver's input: edges [M, 2], vertex prizes and edge costs (float64), and how to map back."""

    edges: np.ndarray
    prizes: np.ndarray
    costs: np.ndarray
    num_nodes: int
    real_edge_ids: np.ndarray  # solver edge i < len(real_edge_ids) is graph edge real_edge_ids[i]
    virtual_edge_ids: np.ndarray  # virtual vertex num_nodes + i stands for graph edge virtual_edge_ids[i]
    cell_ids: np.ndarray  # virtual vertex num_nodes + len(virtual_edge_ids) + i stands for 2-cell cell_ids[i]


def build_instance(num_nodes: int, edge_index: np.ndarray, node_prizes: np.ndarray, edge_prizes: np.ndarray,
                   cost_e: float, cell_ids: np.ndarray | None = None, cell_prizes: np.ndarray | None = None,
                   cell_vertex_ptr: np.ndarray | None = None, cell_vertices: np.ndarray | None = None,
                   cell_spoke_costs: np.ndarray | None = None) -> PCSTInstance:
    """Build the PCST instance. Prizes are float32, as G-Retriever computes them.

    `edge_index` is [2, E]. Optional 2-cells: `cell_ids` [C], `cell_prizes` [C] (> 0), the vertices each is tied to
    in CSR form (`cell_vertices[cell_vertex_ptr[i]:cell_vertex_ptr[i + 1]]` for cell i), and the cost of each of
    cell i's ties, `cell_spoke_costs[i]` (default 0).
    """
    edge_prizes = np.asarray(edge_prizes, dtype=np.float32)
    cost = np.float32(cost_e)
    virtual = edge_prizes > cost
    real_ids = np.flatnonzero(~virtual)
    virtual_ids = np.flatnonzero(virtual)
    nv = len(virtual_ids)
    v_nodes = num_nodes + np.arange(nv)
    v_pairs = np.empty((2 * nv, 2), dtype=np.int64)
    v_pairs[0::2, 0], v_pairs[0::2, 1] = edge_index[0, virtual_ids], v_nodes
    v_pairs[1::2, 0], v_pairs[1::2, 1] = v_nodes, edge_index[1, virtual_ids]

    pieces = [edge_index[:, real_ids].T.astype(np.int64), v_pairs]
    costs = [cost - edge_prizes[real_ids], np.zeros(2 * nv, dtype=np.float32)]
    prizes = [np.asarray(node_prizes, dtype=np.float32), edge_prizes[virtual_ids] - cost]

    cell_ids = np.empty(0, dtype=np.int64) if cell_ids is None else np.asarray(cell_ids, dtype=np.int64)
    if len(cell_ids):
        first_cell = num_nodes + nv
        sizes = np.diff(cell_vertex_ptr)
        pieces.append(np.stack([np.repeat(first_cell + np.arange(len(cell_ids)), sizes), cell_vertices], axis=1))
        spoke = np.zeros(len(cell_ids)) if cell_spoke_costs is None else np.asarray(cell_spoke_costs, np.float64)
        costs.append(np.repeat(spoke, sizes).astype(np.float32))
        prizes.append(np.asarray(cell_prizes, dtype=np.float32))

    return PCSTInstance(edges=np.concatenate(pieces).astype(np.int64),
                        prizes=np.concatenate(prizes).astype(np.float64),
                        costs=np.concatenate(costs).astype(np.float64),
                        num_nodes=num_nodes, real_edge_ids=real_ids, virtual_edge_ids=virtual_ids, cell_ids=cell_ids)


def run_solver(instance: PCSTInstance) -> tuple[np.ndarray, np.ndarray]:
    """pcst_fast on the instance: one unrooted tree, 'gw' pruning. Returns (vertices, solver edge ids)."""
    vertices, edges = pcst_fast(instance.edges, instance.prizes, instance.costs, -1, 1, "gw", 0)
    return np.asarray(vertices, dtype=np.int64), np.asarray(edges, dtype=np.int64)


def solve(num_nodes: int, edge_index: np.ndarray, node_prizes: np.ndarray, edge_prizes: np.ndarray,
          cost_e: float, **cells: np.ndarray | None) -> PCSTSolution:
    """Build the instance (see `build_instance` for the arguments), solve it, map the answer back."""
    inst = build_instance(num_nodes, edge_index, node_prizes, edge_prizes, cost_e, **cells)
    vertices, tree_edges = run_solver(inst)
    n, nv = inst.num_nodes, len(inst.virtual_edge_ids)
    picked_real = inst.real_edge_ids[tree_edges[tree_edges < len(inst.real_edge_ids)]]
    picked_virtual = inst.virtual_edge_ids[vertices[(vertices >= n) & (vertices < n + nv)] - n]
    picked_cells = inst.cell_ids[vertices[vertices >= n + nv] - n - nv]
    return PCSTSolution(nodes=np.sort(vertices[vertices < n]),
                        edges=np.sort(np.concatenate([picked_real, picked_virtual])),
                        cells=np.sort(picked_cells))
