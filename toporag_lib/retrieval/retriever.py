"""One interface for every retrieval: `make_retriever(config, training)` gives a retriever, and
`retriever.retrieve(sample, cc, query)` a question's subcomplex.

    retriever = make_retriever(RetrievalConfig("toporag", k0=3, k1=5, k2=2, c2=1.0, cost_e=0.5))
    retriever = make_retriever(RetrievalConfig("subgraphrag"), training=[(sample, cc, q_emb), ...])
    sub = retriever.retrieve(sample, cc, q_emb)

A model-free method (the paper's and the baselines' in `retrieval.baselines.model_free`) reads only the complex and
the query and ignores `training`; a fitted one (`retrieval.baselines.fitted`) is fitted on `training`, the
training split's (sample, complex, query embedding) triples: pass the training split only, never validation or test.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import torch

from toporag_lib.data.graph import QASample
from toporag_lib.retrieval.baselines.fitted.fitting import fit
from toporag_lib.retrieval.baselines.fitted.question import graph_question
from toporag_lib.retrieval.by_method import retrieve
from toporag_lib.retrieval.retrieval_config import FITTED_METHODS, RetrievalConfig
from toporag_lib.retrieval.subcomplex import Subcomplex
from toporag_lib.topology.complex import CellComplex

Question = tuple[QASample, CellComplex, torch.Tensor]  # a sample, its complex (with features), its query embedding


class Retriever(Protocol):
    config: RetrievalConfig

    def retrieve(self, sample: QASample, cc: CellComplex, query: torch.Tensor) -> Subcomplex: ...


@dataclass(frozen=True)
class ModelFreeRetriever:
    """A retrieval that learns nothing: `by_method.retrieve` with `config`."""

    config: RetrievalConfig

    def retrieve(self, sample: QASample, cc: CellComplex, query: torch.Tensor) -> Subcomplex:
        return retrieve(cc, query, self.config)


def make_retriever(config: RetrievalConfig, training: Iterable[Question] = ()) -> Retriever:
    """The retriever of `config`: fitted on `training` when its method is fitted, model-free otherwise."""
    if not isinstance(config, RetrievalConfig):
        raise TypeError(f"make_retriever takes a RetrievalConfig, not {type(config).__name__} {config!r}")
    if config.method in FITTED_METHODS:
        return fit(config, [graph_question(sample, cc, query, targets=config.fit_targets) for sample, cc, query in training])
    return ModelFreeRetriever(config)
