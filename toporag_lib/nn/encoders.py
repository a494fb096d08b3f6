"""Every graph encoder by name, behind one `forward(batch) -> [num_graphs, out_dim]` (and `cell_states(batch)`:
the final state of every cell it keeps, before pooling)."""

from __future__ import annotations

from torch import nn

from toporag_lib.nn.cellular import CellularEncoder
from toporag_lib.nn.gnn import GATEncoder, GCNEncoder, GraphTransformerEncoder

ENCODERS: dict[str, type[nn.Module]] = {
    "cellular": CellularEncoder,
    "gcn": GCNEncoder,
    "gat": GATEncoder,
    "gt": GraphTransformerEncoder,
}


def build_encoder(name: str, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                  dropout: float = 0.0, **options) -> nn.Module:
    """The encoder called `name` ("cellular", "gcn", "gat", "gt"); `options` go to its class (e.g. heads)."""
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder {name!r}: expected one of {sorted(ENCODERS)}")
    return ENCODERS[name](in_dim, hidden_dim, out_dim, num_layers=num_layers, dropout=dropout, **options)
