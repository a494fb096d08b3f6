"""SubgraphRAG's triple scorer (Li et al. 2024, "Simple is Effective", section 3.2), adapted to our complexes.

Each triple (edge) e = (h, r, t) of the question's graph gets the logit
    s_e = MLP([z_q, z_h, z_r, z_t, DDE_h, DDE_t])
with z_q the question embedding, z_h, z_t the node features, z_r the edge feature (its relation or verbalised
triple, `embed.embed_graphs`) and DDE the directional distance encodings from the question entities (`dde`). The
MLP is Linear -> ReLU -> Linear, as SubgraphRAG's. Training: binary cross-entropy of s_e against the answer triples
(`entities.answer_edges`), averaged over the graph's triples. Retrieval: the top-K triples by s_e and their end
nodes, no 2-cells (K = 100 in SubgraphRAG on WebQSP; our default, `RetrievalConfig.top_k`, is 10 for graphs of
tens of edges).
"""

from __future__ import annotations

import torch
from torch import nn

from toporag_lib.retrieval.baselines.fitted.dde import dde_width, directional_distance_encoding
from toporag_lib.retrieval.baselines.fitted.question import GraphQuestion
from toporag_lib.retrieval.prizes import top_k
from toporag_lib.retrieval.retrieval_config import RetrievalConfig
from toporag_lib.retrieval.subcomplex import Subcomplex, empty_ids

HIDDEN = 128


class TripleScorer(nn.Module):
    """s_e = MLP([z_q, z_h, z_r, z_t, DDE_h, DDE_t]) for every edge of a question's graph."""

    def __init__(self, dim: int, dde_rounds: int):
        super().__init__()
        self.dim, self.dde_rounds = dim, dde_rounds
        self.mlp = nn.Sequential(nn.Linear(4 * dim + 2 * dde_width(dde_rounds), HIDDEN), nn.ReLU(),
                                 nn.Linear(HIDDEN, 1))

    @classmethod
    def from_config(cls, dim: int, config: RetrievalConfig) -> TripleScorer:
        return cls(dim, config.dde_rounds)

    def forward(self, question: GraphQuestion) -> torch.Tensor:
        cc = question.cc
        src, dst = torch.as_tensor(cc.edge_src, dtype=torch.long), torch.as_tensor(cc.edge_dst, dtype=torch.long)
        dde = directional_distance_encoding(cc, question.entities, self.dde_rounds)
        z0, z1 = cc.z0.float(), cc.z1.float()
        q = question.query.float().reshape(1, -1).expand(len(src), -1)
        return self.mlp(torch.cat([q, z0[src], z1, z0[dst], dde[src], dde[dst]], dim=1)).squeeze(1)

    @staticmethod
    def target(question: GraphQuestion) -> torch.Tensor | None:
        """1 on the answer triples, 0 elsewhere; None when the question has none (it gives no signal)."""
        if question.answer_edges is None or len(question.answer_edges) == 0:
            return None
        y = torch.zeros(question.cc.num_cells(1))
        y[torch.as_tensor(question.answer_edges, dtype=torch.long)] = 1.0
        return y

    @staticmethod
    def loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.binary_cross_entropy_with_logits(logits, target)

    @staticmethod
    def select(question: GraphQuestion, logits: torch.Tensor, config: RetrievalConfig) -> Subcomplex:
        """The top-K triples (K = `config.top_k`, ties broken by the lower edge id); the closure adds their ends."""
        return Subcomplex(empty_ids(), top_k(logits.numpy(), config.top_k), empty_ids())
