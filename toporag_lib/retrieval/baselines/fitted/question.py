"""One question on its complex, as the learned retrievers read it: query embedding, question entities and (for
training only) its answer nodes and triples (`entities`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from toporag_lib.data.graph import QASample
from toporag_lib.retrieval.baselines.fitted.entities import answer_edges, answer_nodes, question_entities
from toporag_lib.topology.complex import CellComplex


@dataclass(frozen=True)
class GraphQuestion:
    """A question's complex (with features), query embedding [dim], question-entity node ids, and, when built for
    training, its answer node and edge ids (None otherwise). `where` names the sample in errors."""

    cc: CellComplex
    query: torch.Tensor
    entities: np.ndarray
    where: str
    answer_nodes: np.ndarray | None = None
    answer_edges: np.ndarray | None = None


def graph_question(sample: QASample, cc: CellComplex, q_emb: torch.Tensor,
                   targets: str | None = None) -> GraphQuestion:
    """The sample's GraphQuestion; `targets` ("answers" or "evidence", `entities`) adds its answer nodes and triples
    (training questions only)."""
    where = f"sample {sample.id!r}"
    if cc.z0 is None or cc.z1 is None:
        raise ValueError(f"{where}: its cell complex has no features (lift(graph, node_emb, edge_emb) first)")
    if cc.num_nodes != sample.graph.num_nodes or cc.num_cells(1) != sample.graph.num_edges:
        raise ValueError(f"{where}: its complex has {cc.num_nodes} nodes and {cc.num_cells(1)} edges, its graph "
                         f"{sample.graph.num_nodes} and {sample.graph.num_edges}: not the complex of this graph")
    entities = question_entities(sample)
    if targets is None:
        return GraphQuestion(cc, torch.as_tensor(q_emb).reshape(-1), entities, where)
    answers = answer_nodes(sample, targets)
    return GraphQuestion(cc, torch.as_tensor(q_emb).reshape(-1), entities, where, answers,
                         answer_edges(sample, cc, entities, answers, targets))
