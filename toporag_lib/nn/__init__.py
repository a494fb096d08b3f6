"""Reasoning over (sub)complexes (paper section 4.3): the cellular encoder and the GNN baselines."""

from toporag_lib.nn.cellular import CellularEncoder
from toporag_lib.nn.encoders import ENCODERS, build_encoder
from toporag_lib.nn.gnn import GATEncoder, GCNEncoder, GraphTransformerEncoder

__all__ = ["ENCODERS", "CellularEncoder", "GATEncoder", "GCNEncoder", "GraphTransformerEncoder", "build_encoder"]
