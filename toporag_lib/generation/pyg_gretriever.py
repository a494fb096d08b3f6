"""PyTorch Geometric's own `GRetriever` (2.8.1) behind our model's interface (`loss`, `loss_terms`, `generate`,
trainable state, parameter groups): an outside reference for the "G-Retriever" preset (`TrainConfig(engine="pyg")`,
presets "G-Retriever (PyG)" and "G-Retriever (PyG) + LoRA"), trained by the one `training.Trainer` (checkpoints,
resume, early stopping, data parallelism) on the same examples. The graph text is cut to `max_txt_len` LLM tokens
here, because PyG's chat-template path does not cut it (its `MAX_TXT_LEN` applies to the Llama-2 layout only).

PyG's own: the GNN is `torch_geometric.nn.models.GAT` (4 heads, out = hidden, as PyG's `examples/llm/g_retriever.py`)
on x0, `node_adj_index` (both directions of every edge, as our GNN baselines) and x1 of each edge as edge_attr
(`edge_dim` set: PyG's example leaves it unset, and GATConv then drops edge_attr without a word); node mean;
projector Linear(h, h), Sigmoid, Linear(h, tokens x H) (`model.projector_hidden` is not used); the loss is Hugging
Face's token mean over the batch, with positions 0..T-1 regardless of left padding (so `loss_terms` is (that mean,
1): under data parallelism each process's batch mean counts equally); LoRA is fixed at r 8, alpha 16, dropout 0.05
on q_proj and v_proj (other values are refused). Validation loss is each batch's mean weighted by its size (equal
to our per-question mean when the answers have the same token count, as ExplaGraphs' do).

PyG's traps, fixed here: with use_lora=False PyG leaves the LLM trainable (we freeze it); with LoRA, peft's
`prepare_model_for_kbit_training` turns the whole LLM to fp32 (we cast the frozen base back to `llm_dtype`; the
adapters stay fp32); without a `sys_prompt` its `LLM` uses Llama-2 `[INST]` strings (we pass `SYS_PROMPT`); its
`inference` samples where the folder's generation config says so, as Llama-2-7b-hf's does (do_sample, temperature
0.6, top-p 0.9): we make it greedy (`greedy`), as our own decoding is. A tokenizer without a chat template (the
`gpu-paper` profile's Llama-2-7b-hf) gets PyG's Llama-2 `[INST]` strings whatever the `sys_prompt`, as in
G-Retriever's code. With a chat template, PyG renders [system, user] with it, cuts the BOS text off the front and
prepends the BOS embedding and the soft tokens; for ChatML (SmolLM2) the sequence is

    <|im_start|>[soft tokens]system\\n{SYS_PROMPT}<|im_end|>\\n<|im_start|>user\\n{graph text} -  - {question}
    <|im_end|>\\n<|im_start|>assistant\\n{answer}<|im_end|>                      <- answer: training only

(the soft tokens sit inside the system turn's header). The LLM folder is `llm_path` or the bundled SmolLM2; PyG's
hub look-up is skipped by passing `num_params` (CPU: infinity, so its GPU-memory heuristic never picks a GPU) or
`n_gpus=1` (device "cuda").
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.llm.models import LLM, GRetriever
from torch_geometric.nn.models import GAT

from toporag_lib.generation.bundled import bundled_model_dir
from toporag_lib.generation.inputs import ExampleBatch
from toporag_lib.generation.llm import (
    check_model_dir,
    load_trainable_state,
    trainable_state,
)
from toporag_lib.generation.soft_prompt import ModelConfig

GAT_HEADS = 4  # PyG's examples/llm/g_retriever.py
PYG_LORA = {"lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.05}  # fixed inside GRetriever
SYS_PROMPT = "You are a helpful assistant."


def check_model_config(model: ModelConfig, device: str) -> None:
    """Refuse settings PyG's GRetriever cannot honour."""
    if model.encoder != "gat" or model.virtual_tokens:
        raise ValueError("engine 'pyg' runs PyG's GAT: model.encoder must be 'gat' and model.virtual_tokens 0")
    if model.lora and {key: getattr(model, key) for key in PYG_LORA} != PYG_LORA:
        raise ValueError(f"PyG's GRetriever fixes LoRA at {PYG_LORA}")
    if model.question_first:
        raise ValueError("engine 'pyg' builds PyG's own prompt (graph text, then question): "
                         "model.question_first must be false")
    if model.readout != "mean":
        raise ValueError("engine 'pyg' pools PyG's GAT by its mean: model.readout must be 'mean'")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"engine 'pyg' takes device 'cpu' or 'cuda', not {device!r}")


def load_pyg_llm(llm_path: str | None, dtype: torch.dtype, device: str) -> LLM:
    """PyG's `LLM` on the local folder, with a system prompt (so the chat template is used), never the hub."""
    folder = Path(llm_path) if llm_path else bundled_model_dir()
    check_model_dir(folder)
    placement = {"n_gpus": 1} if device == "cuda" else {"num_params": math.inf}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="LLM is being used on CPU")
        llm = LLM(str(folder), dtype=dtype, sys_prompt=SYS_PROMPT, **placement)
    greedy(llm.llm.generation_config)
    return llm


def greedy(generation: Any) -> None:
    """Make a model's own generation config greedy, in place: PyG's `inference` calls `generate` without
    `do_sample`, so a folder that ships sampling defaults (Llama-2-7b-hf: do_sample, temperature 0.6, top-p 0.9)
    would sample its test answers, unlike our greedy decoding (`generation.llm.LLM.generate`)."""
    generation.do_sample = False
    generation.temperature = generation.top_p = generation.top_k = None


class PygGRetriever(nn.Module):
    """GAT + PyG's GRetriever, with the LLM frozen (or LoRA over a base kept in the LLM's dtype)."""

    def __init__(self, config: ModelConfig, in_dim: int, llm_path: str | None, dtype: torch.dtype,
                 device: str) -> None:
        super().__init__()
        check_model_config(config, device)
        llm = load_pyg_llm(llm_path, dtype, device)
        llm.llm.requires_grad_(False)
        gnn = GAT(in_channels=in_dim, hidden_channels=config.hidden_dim, out_channels=config.hidden_dim,
                  num_layers=config.num_layers, heads=GAT_HEADS, dropout=config.dropout, edge_dim=in_dim)
        self.retriever = GRetriever(llm, gnn, use_lora=config.lora, mlp_out_tokens=config.num_soft_tokens)
        for param in self.retriever.llm_generator.parameters():
            if not param.requires_grad:
                param.data = param.data.to(dtype)
        self.tokenizer = llm.tokenizer

    def inputs(self, batch: ExampleBatch, max_txt_len: int) -> dict[str, Any]:
        """GRetriever's keyword arguments (labels aside), each graph text cut to `max_txt_len` tokens."""
        graphs = batch.graphs
        edge_index, edge_id = graphs.node_adj_index[:2], graphs.node_adj_index[2]
        return {"question": batch.questions, "additional_text_context": self.cut(batch.texts, max_txt_len),
                "x": graphs.x0, "edge_index": edge_index, "edge_attr": graphs.x1[edge_id], "batch": graphs.batch}

    def n_tokens(self, texts: list[str]) -> list[int]:
        """Each graph text's length in the LLM's tokens (what `cut` counts)."""
        return [len(i) for i in self.tokenizer(list(texts), add_special_tokens=False).input_ids]

    def cut(self, texts: list[str], max_txt_len: int) -> list[str]:
        """Each text cut to its first `max_txt_len` tokens (decoded back to text)."""
        ids = self.tokenizer(texts, add_special_tokens=False).input_ids
        return [text if len(i) <= max_txt_len else self.tokenizer.decode(i[:max_txt_len])
                for text, i in zip(texts, ids)]

    def loss(self, batch: ExampleBatch, max_txt_len: int = 512, reduction: str = "mean") -> Tensor:
        """PyG's loss (its token mean over the batch); "none" gives that mean once per question (float64)."""
        loss = self.retriever(label=batch.labels, **self.inputs(batch, max_txt_len))
        if reduction == "none":
            return torch.full((len(batch),), float(loss), dtype=torch.float64)
        return loss

    def loss_terms(self, batch: ExampleBatch, max_txt_len: int = 512) -> tuple[Tensor, Tensor]:
        """(PyG's batch mean, 1): see the module docstring."""
        return self.loss(batch, max_txt_len), torch.ones(())

    @torch.no_grad()
    def generate(self, batch: ExampleBatch, max_txt_len: int = 512, max_new_tokens: int = 32) -> list[str]:
        outputs = self.retriever.inference(max_out_tokens=max_new_tokens, **self.inputs(batch, max_txt_len))
        return [output.strip() for output in outputs]

    def trainable_state(self) -> dict[str, Tensor]:
        return trainable_state(self)

    def load_trainable_state(self, state: dict[str, Tensor]) -> None:
        load_trainable_state(self, state)

    def parameter_groups(self, lr: float, lora_lr: float, weight_decay: float) -> list[dict]:
        """AdamW groups: GNN and projector at `lr`, LoRA adapters at `lora_lr`."""
        trainable = [(name, p) for name, p in self.named_parameters() if p.requires_grad]
        graph_side = [p for name, p in trainable if "lora_" not in name]
        adapters = [p for name, p in trainable if "lora_" in name]
        groups = [{"params": graph_side, "lr": lr, "weight_decay": weight_decay}]
        if adapters:
            groups.append({"params": adapters, "lr": lora_lr, "weight_decay": weight_decay})
        return groups
