"""The one model factory: our soft-prompt model (`engine="toporag"`) or PyTorch Geometric's GRetriever (`"pyg"`),
both with the interface the trainer uses (`loss`, `loss_terms`, `generate`, trainable state, parameter groups)."""

from __future__ import annotations

import torch
from torch import nn

from toporag_lib.generation.llm import load_llm
from toporag_lib.generation.soft_prompt import ModelConfig, TopoRAGModel
from toporag_lib.hardware import resolve_llm_dtype
from toporag_lib.seeding import seed_everything

ENGINES = ("toporag", "pyg")


def build_model(engine: str, config: ModelConfig, in_dim: int, *, llm_path: str | None, llm_dtype: str,
                device: str, seed: int) -> nn.Module:
    """The model of `engine` with its LLM in `llm_dtype` ("auto": the device's native choice, `hardware`), its
    trainable weights initialised from `seed` (the LLM loads first for ours, after seeding for PyG's, as each was
    always built)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known: {list(ENGINES)}")
    dtype = getattr(torch, resolve_llm_dtype(llm_dtype, device))
    if engine == "pyg":
        from toporag_lib.generation.pyg_gretriever import (
            PygGRetriever,  # PyG's LLM classes load only when asked
        )

        seed_everything(seed)
        return PygGRetriever(config, in_dim, llm_path, dtype, device)
    llm = load_llm(llm_path, dtype=dtype, device=device)
    seed_everything(seed)
    return TopoRAGModel(llm, in_dim, config)
