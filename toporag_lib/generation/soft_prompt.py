"""TopoRAG and its baselines as one model: graph encoder -> projector -> soft prompt -> frozen LLM (or LoRA).

| configuration | encoder | soft prompt | graph text | LLM |
|---|---|---|---|---|
| TopoRAG (prompt tuning) | `cellular` | projected complex | subcomplex | frozen |
| TopoRAG + LoRA | `cellular` | projected complex | subcomplex | LoRA |
| G-Retriever | `gt` or `gat` | projected graph | subgraph | frozen / LoRA |
| GraphToken | `gat` | projected graph | none | frozen |
| prompt tuning | none | `virtual_tokens` learned vectors | subgraph | frozen |
| LoRA on text, zero-shot | none | none | subgraph | LoRA / frozen |

The projector is G-Retriever's (Linear, Sigmoid, Linear), widened to `num_soft_tokens` tokens. The pool before it
is the paper's mean (eq. 20), or with `readout="question"` an attention over the cells scored against the question
(`nn.readout`; not the paper's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch

from toporag_lib.generation.inputs import ExampleBatch
from toporag_lib.generation.llm import (
    LLM,
    apply_lora,
    load_trainable_state,
    trainable_state,
)
from toporag_lib.nn.encoders import ENCODERS, build_encoder
from toporag_lib.nn.readout import QuestionReadout


READOUTS = ("mean", "question")


@dataclass
class ModelConfig:
    encoder: str | None = "cellular"  # "cellular", "gcn", "gat", "gt", or None
    hidden_dim: int = 256
    num_layers: int = 2
    dropout: float = 0.0
    num_soft_tokens: int = 1
    projector_hidden: int = 1024
    virtual_tokens: int = 0  # graph-independent learned tokens (plain prompt tuning)
    virtual_init: str | None = None  # None: N(0, 0.02^2); a text: its word embeddings, repeated (G-Retriever's)
    lora: bool = False
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    question_first: bool = False  # the LLM reads {question}\n{graph text} (`LLM.question_first`); not the paper's
    readout: str = "mean"  # POOL: "mean", the paper's eq. 20, or "question" (`nn.readout.QuestionReadout`)

    def __post_init__(self) -> None:
        if self.encoder is not None and self.encoder not in ENCODERS:
            raise ValueError(f"ModelConfig.encoder={self.encoder!r}: expected one of {sorted(ENCODERS)} or None")
        for name in ("hidden_dim", "num_layers", "num_soft_tokens", "projector_hidden", "lora_r", "lora_alpha"):
            if getattr(self, name) < 1:
                raise ValueError(f"ModelConfig.{name}={getattr(self, name)!r}: expected a positive int")
        if self.readout not in READOUTS:
            raise ValueError(f"ModelConfig.readout={self.readout!r}: expected one of {READOUTS}")
        if self.virtual_tokens < 0:
            raise ValueError(f"ModelConfig.virtual_tokens={self.virtual_tokens!r}: expected an int >= 0")
        for name in ("dropout", "lora_dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"ModelConfig.{name}={getattr(self, name)!r}: expected a number in [0, 1)")

    def to_dict(self) -> dict:
        return asdict(self)


def initial_virtual_tokens(llm: LLM, count: int, text: str | None) -> Tensor:
    """[count, H] float32 starting values of prompt tuning's virtual tokens: N(0, 0.02^2), or, given `text`, the
    LLM's word embeddings of its tokens (special tokens included), repeated until there are `count` and cut there,
    as G-Retriever's `PromptTuningLLM` initialises them from its dataset's prompt."""
    if text is None:
        return torch.randn(count, llm.hidden_size) * 0.02
    ids = llm.tokenizer(text).input_ids
    if not ids:
        raise ValueError(f"ModelConfig.virtual_init={text!r} has no tokens to start the virtual tokens from")
    ids = (ids * -(-count // len(ids)))[:count]
    weight = llm.model.get_input_embeddings().weight
    return weight[torch.tensor(ids, device=weight.device)].detach().clone().to(torch.float32).cpu()


class TopoRAGModel(nn.Module):
    """Soft prompt from the (sub)complex, next to its text, into the LLM: h_X* = POOL(...) from the encoder, then
    the projector MLP_phi(h_X*) in R^{d_l} (paper eq. 21), `num_soft_tokens` tokens wide."""

    def __init__(self, llm: LLM, in_dim: int, config: ModelConfig):
        super().__init__()
        self.config = config
        if config.lora:
            apply_lora(llm, r=config.lora_r, alpha=config.lora_alpha, dropout=config.lora_dropout)
        llm.question_first = config.question_first  # the prompt layout is part of the model's config
        self.llm = llm
        hidden = llm.hidden_size
        self.encoder = self.readout = self.projector = None
        if config.encoder is not None:
            self.encoder = build_encoder(config.encoder, in_dim, config.hidden_dim, config.hidden_dim,
                                         config.num_layers, config.dropout)
            self.readout = (QuestionReadout(config.hidden_dim, in_dim, config.hidden_dim, config.hidden_dim)
                            if config.readout == "question" else None)
            self.projector = nn.Sequential(nn.Linear(config.hidden_dim, config.projector_hidden), nn.Sigmoid(),
                                           nn.Linear(config.projector_hidden, config.num_soft_tokens * hidden))
        self.virtual = (nn.Parameter(initial_virtual_tokens(llm, config.virtual_tokens, config.virtual_init))
                        if config.virtual_tokens else None)
        for part in (self.encoder, self.readout, self.projector):  # the graph side lives where the LLM does (fp32)
            if part is not None:
                part.to(llm.device)
        if self.virtual is not None:
            self.virtual.data = self.virtual.data.to(llm.device)

    def soft_prompt(self, batch: ExampleBatch) -> Tensor | None:
        """[B, n, H] float32 soft tokens, or None when the configuration has none."""
        parts = []
        if self.encoder is not None:
            pooled = self.pool(batch.graphs.to(self.llm.device))
            parts.append(self.projector(pooled).view(len(batch), self.config.num_soft_tokens, -1))
        if self.virtual is not None:
            parts.append(self.virtual.unsqueeze(0).expand(len(batch), -1, -1))
        return torch.cat(parts, dim=1) if parts else None

    def pool(self, graphs: Batch) -> Tensor:
        """h_X* (eq. 20): the encoder's mean pool, or with `readout="question"` each complex's cells weighed against
        its question (`QuestionReadout`; the encoder's own output layer is then unused)."""
        if self.readout is None:
            return self.encoder(graphs)
        if getattr(graphs, "query", None) is None:
            raise ValueError("readout='question' needs each example's question embedding (ComplexData.query): "
                             "examples made before it existed must be made again")
        states, s = self.encoder.cell_states(graphs)
        return self.readout(states, s, (graphs.x0, graphs.x1, graphs.x2), graphs.query)

    def n_tokens(self, texts: list[str]) -> list[int]:
        """Each graph text's length in the LLM's tokens (the text after the soft prompt, cut at `max_txt_len`)."""
        return self.llm.n_tokens(texts)

    def loss(self, batch: ExampleBatch, max_txt_len: int = 512, max_answer_len: int = 32,
             reduction: str = "mean") -> Tensor:
        return self.llm.loss(self.soft_prompt(batch), batch.texts, batch.questions, batch.labels,
                             max_txt_len=max_txt_len, max_answer_len=max_answer_len, reduction=reduction)

    def loss_terms(self, batch: ExampleBatch, max_txt_len: int = 512,
                   max_answer_len: int = 32) -> tuple[Tensor, Tensor]:
        """The batch loss as (numerator, denominator): the answer tokens' summed loss and their number, which
        data-parallel processes add up before dividing."""
        token_loss, counted = self.llm.token_losses(self.soft_prompt(batch), batch.texts, batch.questions,
                                                    batch.labels, max_txt_len=max_txt_len,
                                                    max_answer_len=max_answer_len)
        return token_loss.sum(), counted.sum()

    @torch.no_grad()
    def generate(self, batch: ExampleBatch, max_txt_len: int = 512, max_new_tokens: int = 32) -> list[str]:
        return self.llm.generate(self.soft_prompt(batch), batch.texts, batch.questions, max_txt_len=max_txt_len,
                                 max_new_tokens=max_new_tokens)

    @torch.no_grad()
    def choice_logprobs(self, batch: ExampleBatch, choices: Sequence[Sequence[str]],
                        max_txt_len: int = 512) -> list[list[float]]:
        """Each question's log-likelihood of each of its candidate answers (`LLM.choice_logprobs`)."""
        return self.llm.choice_logprobs(self.soft_prompt(batch), batch.texts, batch.questions, choices,
                                        max_txt_len=max_txt_len)

    def trainable_state(self) -> dict[str, Tensor]:
        """Only the weights that training changes (encoder, projector, virtual tokens, LoRA adapters)."""
        return trainable_state(self)

    def load_trainable_state(self, state: dict[str, Tensor]) -> None:
        load_trainable_state(self, state)

    def parameter_groups(self, lr: float, lora_lr: float, weight_decay: float) -> list[dict]:
        """AdamW groups: graph side (encoder, projector, virtual tokens) and LoRA adapters, each with its lr."""
        adapters = [p for n, p in self.llm.named_parameters() if p.requires_grad]
        adapter_ids = {id(p) for p in adapters}
        graph_side = [p for p in self.parameters() if p.requires_grad and id(p) not in adapter_ids]
        groups = []
        if graph_side:
            groups.append({"params": graph_side, "lr": lr, "weight_decay": weight_decay})
        if adapters:
            groups.append({"params": adapters, "lr": lora_lr, "weight_decay": weight_decay})
        return groups
