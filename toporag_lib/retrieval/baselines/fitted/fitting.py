"""Retrievals fitted on the training split: SubgraphRAG's triple scorer (`subgraphrag`) and GNN-RAG's candidate GNN
(`gnnrag`). Fit once on the training questions, then retrieve for any question:

    fitted = fit(RetrievalConfig("subgraphrag", top_k=10), [graph_question(s, cc, q, targets="answers") for ... in train])
    sub = fitted.retrieve(sample, cc, q_emb)

(`retrieval.retriever.make_retriever` does this for any method.) Fitting: Adam at `fit_lr`, `fit_epochs`
passes over the training questions that have a target (`entities`), one question per step, in a seeded order;
the weights start from `fit_seed`, inside a forked torch random state, so fitting is deterministic and leaves the
caller's random stream alone. Fitting and retrieval run on one torch thread: their tensors have tens of rows, and
intra-op threads only add synchronisation (fitting the tests' GNN took 72 s on two busy cores, 1.9 s on one).
Without any training question with a target (ExplaGraphs: stance labels name no node) there is nothing to learn,
and the fitted retriever returns the whole graph (ExplaGraphs' own default retrieval); so it does for a graph
without edges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from toporag_lib.data.graph import QASample
from toporag_lib.retrieval.baselines.fitted.gnnrag import CandidateGNN
from toporag_lib.retrieval.baselines.fitted.question import GraphQuestion, graph_question
from toporag_lib.retrieval.baselines.fitted.subgraphrag import TripleScorer
from toporag_lib.retrieval.by_method import QueryEmbeddingError, check_query
from toporag_lib.retrieval.retrieval_config import FITTED_METHODS, RetrievalConfig
from toporag_lib.retrieval.subcomplex import Subcomplex, empty_ids
from toporag_lib.seeding import one_torch_thread
from toporag_lib.topology.complex import CellComplex, closure

MODELS: dict[str, type[TripleScorer] | type[CandidateGNN]] = {"subgraphrag": TripleScorer, "gnnrag": CandidateGNN}


@dataclass
class FittedRetriever:
    """A learned retrieval fitted on `trained_on` training questions (None model: nothing to learn, whole graph)."""

    config: RetrievalConfig
    model: nn.Module | None
    trained_on: int

    @property
    def method(self) -> str:
        return self.config.method

    @property
    def params(self) -> dict[str, Any]:
        return self.config.params()

    def retrieve(self, sample: QASample, cc: CellComplex, query: torch.Tensor) -> Subcomplex:
        """The question's subcomplex, closed under the boundary (see `subgraphrag`, `gnnrag`)."""
        question = graph_question(sample, cc, query)
        if self.model is None or cc.num_cells(1) == 0:
            nodes, edges = np.arange(cc.num_nodes), np.arange(cc.num_cells(1))
        else:
            _check_question(question, self.model.dim)
            self.model.eval()
            with torch.no_grad(), one_torch_thread():
                sub = self.model.select(question, self.model(question), self.config)
            nodes, edges = sub.nodes, sub.edges
        return Subcomplex(*closure(cc, nodes, edges, empty_ids()), method=self.method, params=self.params)


def _check_question(question: GraphQuestion, dim: int) -> None:
    if question.cc.z0.shape[1] != dim:
        raise ValueError(f"{question.where}: cell features of size {question.cc.z0.shape[1]}, the retriever was "
                         f"fitted on size {dim}")
    try:
        check_query(question.query, dim)
    except QueryEmbeddingError as err:
        raise QueryEmbeddingError(f"{question.where}: {err}") from None
    entities = question.entities
    if len(entities) and (entities.min() < 0 or entities.max() >= question.cc.num_nodes):
        raise ValueError(f"{question.where}: question entities {entities.tolist()} outside "
                         f"0..{question.cc.num_nodes - 1}")


def fit(config: RetrievalConfig, questions: Sequence[GraphQuestion]) -> FittedRetriever:
    """Fit `config`'s method ("subgraphrag" or "gnnrag") with its parameters on the training `questions` (built
    with targets); see the module docstring."""
    method = config.method
    if method not in FITTED_METHODS:
        raise ValueError(f"{method!r} is not a learned retrieval method; learned: {list(FITTED_METHODS)}")
    untargeted = [q.where for q in questions if q.answer_nodes is None or q.answer_edges is None]
    if untargeted:
        raise ValueError(f"{untargeted[0]} (and {len(untargeted) - 1} more) was built without its answer cells: "
                         "fit on graph_question(..., targets=config.fit_targets) of the training questions")
    kind = MODELS[method]
    targets = [(q, y) for q in questions if q.cc.num_cells(1) and (y := kind.target(q)) is not None]
    if not targets:
        return FittedRetriever(config, None, 0)
    dim = targets[0][0].cc.z0.shape[1]
    for question, _ in targets:
        _check_question(question, dim)
    with torch.random.fork_rng(), one_torch_thread():
        torch.manual_seed(config.fit_seed)
        model = kind.from_config(dim, config)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.fit_lr, foreach=True)  # as single-tensor, faster
        model.train()
        for epoch in range(config.fit_epochs):
            for k in np.random.default_rng([config.fit_seed, epoch]).permutation(len(targets)):
                question, target = targets[k]
                optimizer.zero_grad(set_to_none=True)
                loss = model.loss(model(question), target)
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"{question.where}: the {method} fitting loss is {loss.item()} at "
                                             f"epoch {epoch + 1} (check the embeddings and fit_lr={config.fit_lr})")
                loss.backward()
                optimizer.step()
    model.eval()
    return FittedRetriever(config, model, len(targets))

