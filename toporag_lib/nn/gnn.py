"""GNN baselines over the 1-skeleton, behind the same `forward(batch) -> [num_graphs, out_dim]`: `GCNEncoder` (the
paper's "w/o MTR" ablation), `GATEncoder` and `GraphTransformerEncoder` (G-Retriever's GNNs). Their graph is
`node_adj_index` (both directions of every non-loop edge; self-loop 1-cells are not seen), with x1 of the edge
as the edge feature where the layer takes one, and mean pooling over nodes.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GATConv, GCNConv, TransformerConv
from torch_geometric.utils import scatter

from toporag_lib.nn.structure import Structure, check_layers

__all__ = ["GCNEncoder", "GATEncoder", "GraphTransformerEncoder"]


class SkeletonGNN(nn.Module):
    """A baseline on the 1-skeleton: `num_layers` convolutions (relu and dropout between), node mean, Linear."""

    uses_edge_features = True

    def __init__(self, convs: list[nn.Module], hidden_dim: int, out_dim: int, dropout: float) -> None:
        super().__init__()
        self.convs = nn.ModuleList(convs)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden_dim, out_dim)

    def cell_states(self, batch: Data) -> tuple[list[Tensor], Structure]:
        """The final node states [h0] (these encoders keep no edge or 2-cell states) and the batch's structure."""
        s = Structure.of(batch)
        edge_index, edge_id = s.node_adj[:2], s.node_adj[2]
        extra = {"edge_attr": batch.x1[edge_id]} if self.uses_edge_features else {}
        h = batch.x0
        for i, conv in enumerate(self.convs):
            if i:
                h = self.dropout(F.relu(h))
            h = conv(h, edge_index, **extra)
        return [h], s

    def forward(self, batch: Data) -> Tensor:
        """[num_graphs, out_dim] for a `ComplexData` batch with x0 and x1."""
        (h,), s = self.cell_states(batch)
        return self.head(scatter(h, s.batches[0], dim=0, dim_size=s.num_graphs, reduce="mean"))


class GCNEncoder(SkeletonGNN):
    """GCN over the nodes (no edge features): the paper's "w/o MTR" ablation."""

    uses_edge_features = False

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                 dropout: float = 0.0) -> None:
        dims = _layer_dims(in_dim, hidden_dim, num_layers)
        super().__init__([GCNConv(a, b) for a, b in dims], hidden_dim, out_dim, dropout)


class GATEncoder(SkeletonGNN):
    """GAT with edge features, heads averaged (concat=False), as G-Retriever's "gat"."""

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2, dropout: float = 0.0,
                 heads: int = 4) -> None:
        dims = _layer_dims(in_dim, hidden_dim, num_layers)
        convs = [GATConv(a, b, heads=heads, concat=False, edge_dim=in_dim) for a, b in dims]
        super().__init__(convs, hidden_dim, out_dim, dropout)


class GraphTransformerEncoder(SkeletonGNN):
    """TransformerConv with edge features, heads concatenated to hidden_dim: G-Retriever's default "gt"."""

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2, dropout: float = 0.0,
                 heads: int = 4) -> None:
        if hidden_dim % heads:
            raise ValueError(f"hidden_dim={hidden_dim} must be a multiple of heads={heads}")
        dims = _layer_dims(in_dim, hidden_dim, num_layers)
        convs = [TransformerConv(a, b // heads, heads=heads, edge_dim=in_dim) for a, b in dims]
        super().__init__(convs, hidden_dim, out_dim, dropout)


def _layer_dims(in_dim: int, hidden_dim: int, num_layers: int) -> list[tuple[int, int]]:
    check_layers(num_layers)
    return [(in_dim if i == 0 else hidden_dim, hidden_dim) for i in range(num_layers)]
