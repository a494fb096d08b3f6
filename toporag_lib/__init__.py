"""TopoRAG: retrieved cell complex-augmented generation for textual graph question answering.

    from toporag_lib import load_dataset, TextEncoder, embed_graphs, lift, retrieve, textualize_subcomplex

The package follows the pipeline: `data` (graphs, loaders, the dataset registry), `embed`, `topology` (lifting),
`retrieval`, `nn` (encoders), `generation` (LLM, soft prompt), `training` (trainer, ledger); `study` holds what the
notebooks call, and the method never imports it. Names below load their module on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "toporag_lib.data": ("DatasetFileError", "QADataset", "QASample", "TextualGraph", "load_dataset", "textualize"),
    "toporag_lib.embed": ("TextEncoder", "embed_graphs"),
    "toporag_lib.topology": ("CellComplex", "ComplexData", "LiftConfig", "lift", "lift_cached"),
    "toporag_lib.retrieval": ("RetrievalConfig", "Subcomplex", "retrieve", "textualize_subcomplex"),
    "toporag_lib.nn": ("CellularEncoder", "build_encoder"),
    "toporag_lib.generation": ("ModelConfig", "TopoRAGModel", "build_model", "load_llm"),
    "toporag_lib.training": ("TrainConfig", "Trainer", "run"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'toporag_lib' has no attribute {name!r}")
    value = getattr(import_module(_MODULE_OF[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
