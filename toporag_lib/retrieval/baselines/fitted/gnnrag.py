"""GNN-RAG's retrieval (Mavromatis and Karypis 2024), adapted: a question-conditioned GNN scores every node as an
answer candidate; the shortest paths from the question entities to the best candidates are what the LLM reads.

GNN: node inputs x_v = [z_v, z_v * z_q, 1(v is a question entity)], edge inputs [z_r, z_r * z_q, +-1] for each edge
in both directions (the sign tells them apart), each projected to HIDDEN; then `gnn_layers` residual GINE layers
(PyTorch Geometric's GINEConv: h_v <- h_v + ReLU(MLP(h_v + sum_u ReLU(h_u + e_uv))), whose messages read the
relation, as GNN-RAG's relation-aware ReaRev layers do; GATConv, whose edge features only weigh the messages, did
not learn the tests' relation-from-the-entity answers), and a linear read-out: one logit s_v per node. Training:
cross-entropy of softmax_v(s_v) against the uniform distribution over the answer nodes (`entities.answer_nodes`), as
GNN-RAG's ReaRev is trained towards the answer distribution. Retrieval: the top `candidates` nodes by s_v and every
shortest undirected path from a question entity to one of them (`graph_paths`); a candidate that no entity reaches
comes alone. No 2-cells.
"""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GINEConv

from toporag_lib.retrieval.baselines.fitted.graph_paths import shortest_path_edges
from toporag_lib.retrieval.baselines.fitted.question import GraphQuestion
from toporag_lib.retrieval.prizes import top_k
from toporag_lib.retrieval.retrieval_config import RetrievalConfig
from toporag_lib.retrieval.subcomplex import Subcomplex, empty_ids

HIDDEN = 64


class CandidateGNN(nn.Module):
    """s_v for every node of a question's graph (module docstring)."""

    def __init__(self, dim: int, layers: int):
        super().__init__()
        self.dim = dim
        self.node_in = nn.Linear(2 * dim + 1, HIDDEN)
        self.edge_in = nn.Linear(2 * dim + 1, HIDDEN)
        self.convs = nn.ModuleList(GINEConv(nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                                                          nn.Linear(HIDDEN, HIDDEN))) for _ in range(layers))
        self.out = nn.Linear(HIDDEN, 1)

    @classmethod
    def from_config(cls, dim: int, config: RetrievalConfig) -> CandidateGNN:
        return cls(dim, config.gnn_layers)

    def forward(self, question: GraphQuestion) -> torch.Tensor:
        cc = question.cc
        q = question.query.float().reshape(1, -1)
        z0, z1 = cc.z0.float(), cc.z1.float()
        is_entity = torch.zeros(cc.num_nodes, 1)
        is_entity[torch.as_tensor(question.entities, dtype=torch.long)] = 1.0
        src, dst = torch.as_tensor(cc.edge_src, dtype=torch.long), torch.as_tensor(cc.edge_dst, dtype=torch.long)
        edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
        direction = torch.cat([torch.ones(len(src), 1), -torch.ones(len(src), 1)])
        edges = torch.cat([z1, z1 * q], dim=1).repeat(2, 1)
        h = self.node_in(torch.cat([z0, z0 * q, is_entity], dim=1))
        e = self.edge_in(torch.cat([edges, direction], dim=1))
        for conv in self.convs:
            h = h + torch.relu(conv(h, edge_index, e))
        return self.out(h).squeeze(1)

    @staticmethod
    def target(question: GraphQuestion) -> torch.Tensor | None:
        """The uniform distribution over the answer nodes; None when the question has none (no signal)."""
        if question.answer_nodes is None or len(question.answer_nodes) == 0:
            return None
        y = torch.zeros(question.cc.num_nodes)
        y[torch.as_tensor(question.answer_nodes, dtype=torch.long)] = 1.0 / len(question.answer_nodes)
        return y

    @staticmethod
    def loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return -(target * torch.log_softmax(logits, dim=0)).sum()

    @staticmethod
    def select(question: GraphQuestion, logits: torch.Tensor, config: RetrievalConfig) -> Subcomplex:
        """The top `config.candidates` nodes and the shortest paths to them from the question entities."""
        candidates = top_k(logits.numpy(), config.candidates)
        return Subcomplex(candidates, shortest_path_edges(question.cc, question.entities, candidates), empty_ids())
