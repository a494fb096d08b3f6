"""POOL conditioned on the question: an alternative to the paper's mean (eq. 20), for the soft prompt.

The paper's POOL is a mean over every cell of the subcomplex, the same whatever is asked, so the one loop a question
names is diluted among all cells. The LLM-free probe (`study.probe`) measured that on testbed version 3's
counterfactual twins: with a mean readout the 2-cells add nothing a twin pair can show; with an attention readout
that scores each cell against the question they do, also over the plain (question-blind) cell states the soft
prompt's encoder computes (readout "attention, plain inputs"). This module is that readout, for `ModelConfig.readout
= "question"`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn.aggr import AttentionalAggregation

from toporag_lib.nn.structure import Structure

__all__ = ["QuestionReadout"]


class QuestionReadout(nn.Module):
    """Per cell dimension d, r_d = sum_c softmax_c(g_d(u_c)) W_d u_c over the complex's d-cells, with
    u_c = [h_c; z_q; m_c] and m_c = sqrt(k) * (x_c . z_q): h_c the cell's final state, x_c its input feature, z_q the
    question's embedding (k wide; unit norm, so m_c is a scaled cosine for 0- and 1-cells); g_d a two-layer MLP.
    Output Linear([r_0; r_1; r_2]); r_d is zero where a complex has no d-cells, or the encoder keeps no d-states."""

    def __init__(self, state_dim: int, query_dim: int, hidden_dim: int, out_dim: int) -> None:
        super().__init__()
        width = state_dim + query_dim + 1
        self.readouts = nn.ModuleList(
            AttentionalAggregation(nn.Sequential(nn.Linear(width, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 1)),
                                   nn.Linear(width, hidden_dim)) for _ in range(3))
        self.head = nn.Linear(3 * hidden_dim, out_dim)
        self.hidden_dim = hidden_dim

    def forward(self, states: list[Tensor], s: Structure, features: tuple[Tensor, Tensor, Tensor],
                queries: Tensor) -> Tensor:
        """[num_graphs, out_dim] from the cells' states and input features and each complex's query [num_graphs, k]."""
        if queries.shape[0] != s.num_graphs:
            raise ValueError(f"{queries.shape[0]} question embeddings for {s.num_graphs} complexes")
        scale = queries.shape[-1] ** 0.5
        pooled = []
        for d, readout in enumerate(self.readouts):
            if d < len(states) and len(states[d]):
                index = s.batches[d]
                match = (features[d] * queries[index]).sum(-1, keepdim=True) * scale
                cells = torch.cat([states[d], queries[index], match], dim=-1)
                pooled.append(readout(cells, index, dim_size=s.num_graphs))
            else:
                pooled.append(queries.new_zeros(s.num_graphs, self.hidden_dim))
        return self.head(torch.cat(pooled, dim=-1))
