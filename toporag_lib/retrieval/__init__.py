"""Retrieval (paper section 4.2): a query-relevant subcomplex of a cell complex, and its text for the LLM."""

from toporag_lib.retrieval.config import METHODS, RetrievalConfig, dataset_retrieval
from toporag_lib.retrieval.methods import retrieve
from toporag_lib.retrieval.subcomplex import Subcomplex
from toporag_lib.retrieval.textualize import textualize_subcomplex

__all__ = ["METHODS", "RetrievalConfig", "dataset_retrieval", "Subcomplex", "retrieve", "textualize_subcomplex"]
