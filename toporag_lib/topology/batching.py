"""Cell complexes as PyTorch Geometric `Data`, batched by `Batch.from_data_list` and `DataLoader`.

A `ComplexData` holds one complex (or the subcomplex spanned by some of its cells):

| attribute | shape | batched by adding |
|---|---|---|
| `x0`, `x1`, `x2` | [n_k, d] cell features (when the complex has them) | concatenated |
| `node_edge_index` | [2, .] (node, edge) face pairs | (n0, n1) |
| `edge_cell_index` | [2, .] (edge, 2-cell) face pairs | (n1, n2) |
| `node_adj_index` | [3, .] (node, node, shared edge) | (n0, n0, n1) |
| `edge_adj_index` | [3, .] (edge, edge, shared 2-cell) | (n1, n1, n2) |
| `batch` (PyG's, 0-cells), `batch_1`, `batch_2` | [n_k] complex of each cell | 1 per complex |
| `node_ids`, `edge_ids`, `cell_ids` | [n_k] ids in the lifted complex (= graph ids for 0/1-cells) | nothing |

`num_nodes` is n0; `num_cells_1` and `num_cells_2` are n1 and n2 (per complex after batching).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from toporag_lib.topology.complex import CellComplex, boundary_positions, closure

INDEX_DIMS = {
    "node_edge_index": (0, 1),
    "edge_cell_index": (1, 2),
    "node_adj_index": (0, 0, 1),
    "edge_adj_index": (1, 1, 2),
}
BATCH_KEYS = ("batch_1", "batch_2")
Ids = Sequence[int] | np.ndarray | Tensor | None

__all__ = ["ComplexData", "INDEX_DIMS", "BATCH_KEYS", "subcomplex"]


class ComplexData(Data):
    """One cell complex; every index row is offset by the cell count of its own dimension when batched."""

    def __inc__(self, key: str, value: object, *args, **kwargs) -> object:
        if key in INDEX_DIMS:
            counts = (self.num_nodes, self.num_cells_1, self.num_cells_2)
            return torch.tensor([[counts[dim]] for dim in INDEX_DIMS[key]])
        if key in BATCH_KEYS:
            return 1
        return super().__inc__(key, value, *args, **kwargs)

    @classmethod
    def from_complex(cls, cc: CellComplex, nodes: Ids = None, edges: Ids = None, cells: Ids = None) -> ComplexData:
        """The whole complex, or (when any selection is given) the subcomplex those cells span."""
        if nodes is None and edges is None and cells is None:
            ids = tuple(np.arange(cc.num_cells(dim)) for dim in range(3))
        else:
            cc, ids = subcomplex(cc, nodes, edges, cells)
        n0, n1, n2 = (cc.num_cells(dim) for dim in range(3))
        data = cls(
            node_edge_index=cc.incidence_index(1), edge_cell_index=cc.incidence_index(2),
            node_adj_index=cc.upper_adjacency_index(0), edge_adj_index=cc.upper_adjacency_index(1),
            batch_1=torch.zeros(n1, dtype=torch.long), batch_2=torch.zeros(n2, dtype=torch.long),
            node_ids=torch.from_numpy(ids[0]), edge_ids=torch.from_numpy(ids[1]), cell_ids=torch.from_numpy(ids[2]),
            num_cells_1=n1, num_cells_2=n2,
        )
        data.num_nodes = n0
        if cc.z0 is not None:
            data.x0, data.x1, data.x2 = cc.z0, cc.z1, cc.z2
        return data


def subcomplex(cc: CellComplex, nodes: Ids = None, edges: Ids = None,
               cells: Ids = None) -> tuple[CellComplex, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The smallest subcomplex holding the given cells (closed under the boundary), re-indexed from 0.

    Returns it and the original ids of its 0-, 1- and 2-cells (sorted). Features are sliced.
    """
    node_ids, edge_ids, cell_ids = closure(cc, _ids(nodes), _ids(edges), _ids(cells))
    ptr = np.concatenate([[0], np.cumsum(cc.cell_lengths()[cell_ids])]).astype(np.int64)
    flat = boundary_positions(cc.cell_ptr, cell_ids)
    node_map, edge_map = _inverse(node_ids, cc.num_cells(0)), _inverse(edge_ids, cc.num_cells(1))
    sub = CellComplex(
        num_nodes=len(node_ids), edge_src=node_map[cc.edge_src[edge_ids]], edge_dst=node_map[cc.edge_dst[edge_ids]],
        cell_ptr=ptr, cell_nodes=node_map[cc.cell_nodes[flat]], cell_edges=edge_map[cc.cell_edges[flat]],
        cell_signs=cc.cell_signs[flat], cell_generator=edge_map[cc.cell_generator[cell_ids]],
        tree_mask=None if cc.tree_mask is None else cc.tree_mask[edge_ids], options=cc.options,
    )
    if cc.z0 is not None:
        sub = replace(sub, z0=cc.z0[torch.from_numpy(node_ids)], z1=cc.z1[torch.from_numpy(edge_ids)],
                      z2=cc.z2[torch.from_numpy(cell_ids)])
    return sub, (node_ids, edge_ids, cell_ids)


def _ids(selection: Ids) -> np.ndarray:
    """Sorted unique int64 ids from None, a sequence, an array or a tensor."""
    if selection is None:
        return np.zeros(0, dtype=np.int64)
    if isinstance(selection, Tensor):
        selection = selection.cpu().numpy()
    return np.unique(np.asarray(selection, dtype=np.int64))


def _inverse(ids: np.ndarray, size: int) -> np.ndarray:
    """Map from old id to position in `ids` (-1 elsewhere)."""
    inverse = np.full(size, -1, dtype=np.int64)
    inverse[ids] = np.arange(len(ids))
    return inverse
