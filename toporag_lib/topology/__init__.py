"""Lifting (paper section 4.1): a textual graph becomes a 2-dimensional cell complex, batched for message passing."""

from toporag_lib.topology.batching import ComplexData, subcomplex
from toporag_lib.topology.complex import Cell, CellComplex, boundary_positions, closure
from toporag_lib.topology.lifting import (
           BASES,
           PARALLEL,
           TREES,
           LiftConfig,
           lift,
           lift_edge_index,
)
from toporag_lib.topology.lifting_cache import lift_cached
from toporag_lib.topology.lifting_many import lift_many

__all__ = ["BASES", "PARALLEL", "TREES", "Cell", "CellComplex", "ComplexData", "LiftConfig", "boundary_positions",
           "closure",
           "lift", "lift_cached", "lift_edge_index", "lift_many", "subcomplex"]
