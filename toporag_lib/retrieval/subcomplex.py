"""What a retrieval returns: the ids of the retrieved cells of each dimension, closed under the boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Subcomplex:
    """Sorted indices of the retrieved nodes, edges (of the input graph) and 2-cells (of the complex)."""

    nodes: np.ndarray
    edges: np.ndarray
    cells2: np.ndarray
    method: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def num_cells(self, dim: int) -> int:
        return len((self.nodes, self.edges, self.cells2)[dim])

    def counts(self) -> dict[str, int]:
        return {"0-cells": len(self.nodes), "1-cells": len(self.edges), "2-cells": len(self.cells2)}


def empty_ids() -> np.ndarray:
    return np.empty(0, dtype=np.int64)
