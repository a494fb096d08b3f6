"""Directional distance encodings (SubgraphRAG, Li et al. 2024, section 3.2): where a node lies from the question's
entities, along and against the edges' directions.

h^(0)_v = onehot(v is a question entity) in R^2 ((1, 0): another node, (0, 1): an entity); forward rounds
h^(l+1)_v = mean_{(u -> v)} h^(l)_u, backward rounds the same over the reversed edges, each starting from h^(0) (a
node without such edges gets 0). The encoding is [h^(0), forward rounds 1..R, backward rounds 1..R]: 2 (1 + 2R)
numbers per node.
"""

from __future__ import annotations

import numpy as np
import torch

from toporag_lib.topology.complex import CellComplex


def dde_width(rounds: int) -> int:
    return 2 * (1 + 2 * rounds)


def _mean_over_in_edges(h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    total = torch.zeros_like(h).index_add_(0, dst, h[src])
    count = torch.zeros(len(h), dtype=h.dtype).index_add_(0, dst, torch.ones(len(dst), dtype=h.dtype))
    return total / count.clamp(min=1).unsqueeze(1)


def directional_distance_encoding(cc: CellComplex, entities: np.ndarray, rounds: int) -> torch.Tensor:
    """[num_nodes, dde_width(rounds)] float32 encodings of every node (module docstring)."""
    indicator = torch.zeros(cc.num_nodes, dtype=torch.long)
    indicator[torch.as_tensor(entities, dtype=torch.long)] = 1
    start = torch.nn.functional.one_hot(indicator, 2).float()
    src, dst = torch.as_tensor(cc.edge_src, dtype=torch.long), torch.as_tensor(cc.edge_dst, dtype=torch.long)
    parts = [start]
    for a, b in ((src, dst), (dst, src)):
        h = start
        for _ in range(rounds):
            h = _mean_over_in_edges(h, a, b)
            parts.append(h)
    return torch.cat(parts, dim=1)
