"""Retrieval settings, written once: the method and its parameters, with the defaults of the scene-graph datasets.

Each dataset's own defaults are overrides of these (`toporag_lib.data.registry`), merged in one place
(`dataset_retrieval`); `retrieve(cc, query, config)` takes the object, and `RetrievalConfig.params()` gives the
parameters its method reads (what a method function is called with; they carry no defaults of their own).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from toporag_lib.data.registry import dataset_spec
from toporag_lib.retrieval.toporag import CELL_COSTS, CELL_RANKS, CELLS, PRIZES
from toporag_lib.settings import ConfigError

FIT_TARGETS = ("answers", "evidence")  # what a fitted retrieval is trained on (`baselines.fitted.entities`)

METHOD_PARAMS: dict[str, tuple[str, ...]] = {
    "toporag": ("k0", "k1", "k2", "c2", "cost_e", "prizes", "cells", "cell_rank", "cell_cost"),
    "gretriever": ("k0", "k1", "cost_e"),
    "shortest_path": ("k0",),
    "whole_graph": ("k2",),
    "khop": ("k0", "hops"),
    "kaping": ("k1",),
    "subgraphrag": ("top_k", "dde_rounds", "fit_epochs", "fit_lr", "fit_seed", "fit_targets"),
    "gnnrag": ("candidates", "gnn_layers", "fit_epochs", "fit_lr", "fit_seed", "fit_targets"),
}
PAPER_ALGORITHM_3 = {"cells": "all", "cell_cost": "boundary"}  # its literal reading: every 2-cell, paying its edges
FITTED_METHODS = ("subgraphrag", "gnnrag")  # fitted on the training split first (`retrieval.baselines.fitted`)
METHODS = tuple(m for m in METHOD_PARAMS if m not in FITTED_METHODS)  # what `retrieve` runs on a complex alone


@dataclass(frozen=True)
class RetrievalConfig:
    """A retrieval method and every parameter any method reads (each method reads the ones METHOD_PARAMS lists).

    k0, k1: top-k 0- and 1-cells that get rank prizes (eq. 13); k2: top-k 2-cells (Algorithm 3); c2: the cost per
    boundary edge in a 2-cell's prize (eq. 14); cost_e: G-Retriever's edge cost; hops: the k-hop baseline's radius.
    prizes, cells, cell_rank, cell_cost: TopoRAG's construction choices (`retrieval.toporag`).
    The learned retrievals (`retrieval.baselines.fitted`): top_k, SubgraphRAG's number of triples (its paper takes 100 on
    WebQSP; 10 here, for scene graphs of tens of edges), dde_rounds, its forward and backward rounds of directional
    distance encoding (2, as SubgraphRAG); candidates, GNN-RAG's answer candidates (3), gnn_layers, its GNN's depth
    (2: the testbed's answers lie within two hops of the question's objects); fit_epochs, fit_lr, fit_seed: how
    either is fitted (10 epochs of Adam at 1e-3, SubgraphRAG's rate; weights and order from the seed); fit_targets,
    what it is fitted to: "answers", what its paper trains on (answer nodes; shortest-path triples to them), or
    "evidence", the testbed's evidence cells that every run before this choice used (no real dataset has them).
    """

    method: str = "toporag"
    k0: int = 3
    k1: int = 5
    k2: int = 2
    c2: float = 1.0
    cost_e: float = 0.5
    hops: int = 1
    prizes: str = "rank"
    cells: str = "top_k"
    cell_rank: str = "prize"
    cell_cost: str = "free"
    top_k: int = 10
    dde_rounds: int = 2
    candidates: int = 3
    gnn_layers: int = 2
    fit_epochs: int = 10
    fit_lr: float = 1e-3
    fit_seed: int = 0
    fit_targets: str = "answers"

    def __post_init__(self) -> None:
        if self.method not in METHOD_PARAMS:
            raise ConfigError(f"RetrievalConfig.method={self.method!r}: unknown retrieval method {self.method!r}; "
                              f"known: {list(METHOD_PARAMS)}")
        for name, allowed in (("prizes", PRIZES), ("cells", CELLS), ("cell_rank", CELL_RANKS),
                              ("cell_cost", CELL_COSTS), ("fit_targets", FIT_TARGETS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"RetrievalConfig.{name}={getattr(self, name)!r}: expected one of {list(allowed)}")
        for names, least in ((("k0", "k1", "k2", "hops", "dde_rounds", "fit_seed"), 0),
                             (("top_k", "candidates", "gnn_layers", "fit_epochs"), 1)):
            for name in names:
                value = getattr(self, name)
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                    raise ConfigError(f"RetrievalConfig.{name}={value!r}: expected an int >= {least}")
        for name in ("c2", "cost_e"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not math.isfinite(value) \
                    or value < 0:
                raise ConfigError(f"RetrievalConfig.{name}={value!r}: expected a finite number >= 0")
        lr = self.fit_lr
        if isinstance(lr, bool) or not isinstance(lr, (int, float, np.number)) or not math.isfinite(lr) or lr <= 0:
            raise ConfigError(f"RetrievalConfig.fit_lr={lr!r}: expected a finite number > 0")

    def params(self) -> dict[str, Any]:
        """The parameters the method reads (`METHOD_PARAMS`), by name."""
        return {name: getattr(self, name) for name in METHOD_PARAMS[self.method]}

    def reads(self) -> dict[str, Any]:
        """The method and the parameters it reads: what makes two configs retrieve alike."""
        return {"method": self.method, **self.params()}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def dataset_retrieval(dataset: str, version: int | None = None, **changes: Any) -> RetrievalConfig:
    """The retrieval `dataset`'s questions get by default (its registry overrides, then those of its `version`
    where the registry has some), with `changes` on top."""
    spec = dataset_spec(dataset)
    return RetrievalConfig(**{**spec.retrieval, **spec.version_retrieval.get(version, {}), **changes})
