"""What every encoder reads from a `ComplexData` batch: its index tensors, sizes, and the mean aggregation."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import scatter


class Structure(NamedTuple):
    """The index tensors and sizes of a `ComplexData` batch (or of a single complex)."""

    node_edge: Tensor
    edge_cell: Tensor
    node_adj: Tensor
    edge_adj: Tensor
    batches: tuple[Tensor, Tensor, Tensor]
    num_graphs: int

    @classmethod
    def of(cls, data: Data) -> Structure:
        if data.batch is None:  # one complex, not batched
            batches = tuple(torch.zeros(x.size(0), dtype=torch.long, device=x.device)
                            for x in (data.x0, data.x1, data.x2))
            num_graphs = 1
        else:
            batches, num_graphs = (data.batch, data.batch_1, data.batch_2), data.num_graphs
        return cls(data.node_edge_index, data.edge_cell_index, data.node_adj_index, data.edge_adj_index,
                   batches, num_graphs)


def mean_at(values: Tensor, senders: Tensor, receivers: Tensor, size: int) -> Tensor:
    """AGG: the mean of `values[senders]` at each receiver, zero for receivers without messages."""
    return scatter(values[senders], receivers, dim=0, dim_size=size, reduce="mean")


def check_layers(num_layers: int) -> None:
    if num_layers < 1:
        raise ValueError(f"num_layers={num_layers}: expected at least 1")
