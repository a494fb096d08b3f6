"""Multi-dimensional topological reasoning (paper section 4.3): a batch of (sub)complexes -> one vector each.

`CellularEncoder` is the paper's two-stage network over a `ComplexData` batch (`toporag_lib.topology.batching`):

| paper | code |
|---|---|
| initial states h^0 | `CellularEncoder.inputs`: one `Linear(in_dim, hidden_dim)` per dimension on x0, x1, x2 |
| eq. 16, UPDATE^l for x in X0 u X1 | `SkeletonLayer`: `Update` = h + dropout(relu(W [h; m_F; m_C])) |
| eq. 17, m_F and m_C | `face_coface_messages`: mean of the faces' / cofaces' states, linear map inside `Update` |
| eq. 18, UPDATE (stage 2, all cells) | `UpperLayer`: one more `Update` per dimension, adding m_up |
| eq. 19, m_up | `UpperMessages`: mean over upper neighbours w of relu(W [h_w; h_coface] + b), as CW Networks |
| eq. 20, POOL | `pool_cells`: mean over all 0-, 1- and 2-cells of each complex, then `Linear(hidden_dim, out_dim)` |

Choices, where the paper leaves room:
- Messages leave out the receiver h_x, which the update already sees: M_F and M_C are linear in the sender,
  M(h_x, h_y) = W_type h_y, and M_up(h_x, h_w, h_c) = relu(W [h_w; h_c] + b), as CW Networks' up messages.
  Linear maps commute with the mean, so face and coface states are averaged first and `Update`'s single
  `Linear` over [h; m_1; ...] holds one weight block per message type.
- AGG is the mean (zero when a cell has no such neighbours): no dependence on cycle length or degree scale.
- Stage 1 (eq. 16) updates 0- and 1-cells only, synchronously from layer-l states; 2-cells keep h^0 until
  stage 2, and reach the 1-cells as their cofaces.
- Stage 2 is one layer (eq. 18 defines h^{L+1} once). Eq. 19 feeds the coface's *new* state h^{L+1}_{x u w},
  so stage 2 runs top-down: 2-cells (faces: their boundary edges; they have no cofaces or upper neighbours),
  then 1-cells (faces, cofaces, and edges sharing a 2-cell), then 0-cells (cofaces, and nodes sharing an
  edge); every message reads layer-L states except the coface in m_up. Self-loops have no upper neighbours.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.utils import scatter

from toporag_lib.nn.structure import Structure, check_layers, mean_at

__all__ = ["CellularEncoder", "UpperMessages", "pool_cells"]


def face_coface_messages(h0: Tensor, h1: Tensor, h2: Tensor, s: Structure) -> tuple[Tensor, Tensor, Tensor]:
    """Eq. 17 (before the linear map): m_C of 0-cells (their edges), m_F and m_C of 1-cells (nodes, 2-cells)."""
    node, edge = s.node_edge
    face_edge, cell = s.edge_cell
    return (mean_at(h1, edge, node, h0.size(0)), mean_at(h0, node, edge, h1.size(0)),
            mean_at(h2, cell, face_edge, h1.size(0)))


def pool_cells(states: list[Tensor], batches: tuple[Tensor, ...], num_graphs: int) -> Tensor:
    """Eq. 20: mean over all cells of each complex, whatever their dimension; empty dimensions add nothing."""
    h, index = torch.cat(states), torch.cat(batches)
    return scatter(h, index, dim=0, dim_size=num_graphs, reduce="mean")


class Update(nn.Module):
    """UPDATE(h, m_1, ..., m_k) = h + dropout(relu(W [h; m_1; ...; m_k] + b)): a residual step."""

    def __init__(self, dim: int, num_messages: int, dropout: float) -> None:
        super().__init__()
        self.linear = nn.Linear((1 + num_messages) * dim, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h: Tensor, *messages: Tensor) -> Tensor:
        return h + self.dropout(F.relu(self.linear(torch.cat([h, *messages], dim=-1))))


class UpperMessages(nn.Module):
    """Eq. 19: m_up(x) = mean over w upper-adjacent to x of relu(W [h_w; h_coface] + b) (CW Networks style).

    W [h_w; h_c] = W_w h_w + W_c h_c, so both maps run once per cell and only the sum is formed per pair:
    the edge-edge adjacency has sum L(L-1) pairs over the 2-cells' lengths L, far more rows than there are cells.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.neighbour = nn.Linear(dim, dim)
        self.coface = nn.Linear(dim, dim, bias=False)

    def forward(self, h: Tensor, h_coface: Tensor, adjacency: Tensor) -> Tensor:
        receiver, sender, coface = adjacency
        messages = F.relu(self.neighbour(h)[sender] + self.coface(h_coface)[coface])
        return scatter(messages, receiver, dim=0, dim_size=h.size(0), reduce="mean")


class SkeletonLayer(nn.Module):
    """Stage 1, one layer (eq. 16-17): 0-cells from their cofaces, 1-cells from their faces and cofaces."""

    def __init__(self, dim: int, dropout: float) -> None:
        super().__init__()
        self.node = Update(dim, 1, dropout)
        self.edge = Update(dim, 2, dropout)

    def forward(self, h0: Tensor, h1: Tensor, h2: Tensor, s: Structure) -> tuple[Tensor, Tensor]:
        node_cofaces, edge_faces, edge_cofaces = face_coface_messages(h0, h1, h2, s)
        return self.node(h0, node_cofaces), self.edge(h1, edge_faces, edge_cofaces)


class UpperLayer(nn.Module):
    """Stage 2 (eq. 18-19): every cell, top-down so that m_up sees the coface's new state h^{L+1}."""

    def __init__(self, dim: int, dropout: float) -> None:
        super().__init__()
        self.cell = Update(dim, 1, dropout)
        self.edge = Update(dim, 3, dropout)
        self.node = Update(dim, 2, dropout)
        self.edge_up = UpperMessages(dim)
        self.node_up = UpperMessages(dim)

    def forward(self, h0: Tensor, h1: Tensor, h2: Tensor, s: Structure) -> tuple[Tensor, Tensor, Tensor]:
        face_edge, cell = s.edge_cell
        node_cofaces, edge_faces, edge_cofaces = face_coface_messages(h0, h1, h2, s)
        new2 = self.cell(h2, mean_at(h1, face_edge, cell, h2.size(0)))
        new1 = self.edge(h1, edge_faces, edge_cofaces, self.edge_up(h1, new2, s.edge_adj))
        new0 = self.node(h0, node_cofaces, self.node_up(h0, new1, s.node_adj))
        return new0, new1, new2


class CellularEncoder(nn.Module):
    """TopoRAG's two-stage cellular message passing: `num_layers` stage-1 layers, one stage-2 layer, mean pool."""

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                 dropout: float = 0.0) -> None:
        super().__init__()
        check_layers(num_layers)
        self.inputs = nn.ModuleList(nn.Linear(in_dim, hidden_dim) for _ in range(3))
        self.stage1 = nn.ModuleList(SkeletonLayer(hidden_dim, dropout) for _ in range(num_layers))
        self.stage2 = UpperLayer(hidden_dim, dropout)
        self.head = nn.Linear(hidden_dim, out_dim)

    def cell_states(self, batch: Data) -> tuple[list[Tensor], Structure]:
        """The final states [h0, h1, h2] of every 0-, 1- and 2-cell, and the batch's structure (`batches`: each
        cell's complex)."""
        s = Structure.of(batch)
        h0, h1, h2 = (proj(x) for proj, x in zip(self.inputs, (batch.x0, batch.x1, batch.x2)))
        for layer in self.stage1:
            h0, h1 = layer(h0, h1, h2, s)
        return list(self.stage2(h0, h1, h2, s)), s

    def forward(self, batch: Data) -> Tensor:
        """[num_graphs, out_dim] for a `ComplexData` batch with x0, x1 and x2."""
        states, s = self.cell_states(batch)
        return self.head(pool_cells(states, s.batches, s.num_graphs))
