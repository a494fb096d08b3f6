"""Dataset loaders behind one call: `load_dataset(name, **options) -> QADataset`.

| name | options | source |
|---|---|---|
| `explagraphs` | `root=` (default: bundled) | G-Retriever's ExplaGraphs, shipped |
| `scenegraphs` | `root=` (required), `questions=`, `scene_graphs=` | official GQA files, local |
| `gqa_fixtures` | none | 7 real GQA scene graphs, shipped |
| `webqsp` | `root=` (required) | RoG-webqsp, local |
| `synthetic_scenes` | `num_images=`, `questions_per_image=`, `seed=` | generated here |
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from toporag_lib.datasets.base import DatasetFileError, QADataset

LOADERS: dict[str, str] = {
    "explagraphs": "toporag_lib.datasets.explagraphs:load_explagraphs",
    "scenegraphs": "toporag_lib.datasets.gqa:load_scenegraphs",
    "gqa_fixtures": "toporag_lib.datasets.gqa:load_gqa_fixtures",
    "webqsp": "toporag_lib.datasets.webqsp:load_webqsp",
    "synthetic_scenes": "toporag_lib.datasets.synthetic_scenes:load_synthetic_scenes",
}


def loader(name: str) -> Callable[..., QADataset]:
    if name not in LOADERS:
        raise ValueError(f"unknown dataset {name!r}; known: {sorted(LOADERS)}")
    module, function = LOADERS[name].split(":")
    return getattr(import_module(module), function)


def load_dataset(name: str, **options: Any) -> QADataset:
    """Load a dataset by name; see the module docstring for each dataset's options."""
    return loader(name)(**options)


__all__ = ["DatasetFileError", "QADataset", "load_dataset", "LOADERS"]
