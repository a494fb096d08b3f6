"""Retrieval (paper section 4.2): a query-relevant subcomplex of a cell complex, and its text for the LLM.

The paper's method and the shared machinery live here (`toporag`, `prizes`, `pcst`, `subcomplex`, `textualize`,
`by_method`, `retriever`); the baselines below, model-free (`baselines.model_free`) and fitted on a training split
(`baselines.fitted`), each reached through `retriever.make_retriever`.
"""

from toporag_lib.retrieval.by_method import retrieve
from toporag_lib.retrieval.retrieval_config import METHODS, RetrievalConfig, dataset_retrieval
from toporag_lib.retrieval.retriever import make_retriever
from toporag_lib.retrieval.subcomplex import Subcomplex
from toporag_lib.retrieval.textualize import textualize_subcomplex

__all__ = ["METHODS", "RetrievalConfig", "dataset_retrieval", "Subcomplex", "make_retriever", "retrieve",
           "textualize_subcomplex"]
