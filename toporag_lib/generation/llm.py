"""The frozen LLM that reads [soft prompt; textualized subcomplex; question] and writes the answer.

`load_llm(path)` wraps any local Hugging Face causal-LM folder; `load_llm()` uses the bundled SmolLM2-135M-Instruct
(`toporag_lib.generation.bundled`).
All base weights are frozen; `apply_lora` adds trainable fp32 LoRA adapters.

Prompt layout, with the model's own chat template (the system turn is the template's default unless
`system_prompt` is given):

    {template up to the user content}[soft tokens]{graph text, at most max_txt_len tokens}\\n{question}
    {rest of the template through the assistant's generation prompt}{answer}{end of turn}   <- answer: training only

With `question_first` the question comes before the graph text: [soft tokens]{question}\\n{graph text}, so the
LLM reads the graph knowing what it is asked (a layout the paper does not use; chosen on validation for the testbed).
The split point is found by rendering the template around a placeholder user message and tokenizing the two
sides separately. Without a chat template: [BOS][soft tokens]{graph}\\n{question}{answer}[EOS].
Batches are left-padded (position ids follow the attention mask), so a sample's loss and greedy output do not
depend on the other samples in its batch (exactly in float32; in bfloat16 a different padded length changes the
kernels' rounding, which moves SmolLM2's per-sample loss by up to ~0.1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor

from toporag_lib import atomic
from toporag_lib.generation.bundled import bundled_model_dir
from toporag_lib.hardware import resolve_llm_dtype

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

IGNORE_INDEX = -100
SOFT_TOKEN = -1  # marks soft-prompt positions in `PromptBatch.token_ids`
USER_PLACEHOLDER = "\u27e6toporag-user-content\u27e7"
ANSWER_PLACEHOLDER = "\u27e6toporag-answer\u27e7"
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")
CAUSAL_LM_SUFFIXES = ("ForCausalLM", "LMHeadModel")
MAX_CHOICE_TOKENS = 32  # a candidate answer's tokens counted, as `max_answer_len` counts a trained answer's


# ---------------------------------------------------------------------------------------------------------------
# Loading


def check_model_dir(path: Path) -> None:
    """Raise FileNotFoundError or ValueError unless `path` looks like a Hugging Face causal-LM folder."""
    expected = ("expected a Hugging Face causal-LM folder with config.json, the weights (*.safetensors or *.bin) "
                "and the tokenizer files; load_llm(None) uses the bundled SmolLM2-135M-Instruct")
    if not path.is_dir():
        raise FileNotFoundError(f"no model folder at {path}: {expected}")
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} has no config.json: {expected}")
    if not any(any(path.glob(pattern)) for pattern in WEIGHT_PATTERNS):
        raise FileNotFoundError(f"{path} has no weight files: {expected}")
    if (path / "modules.json").is_file():
        raise ValueError(f"{path} is a sentence-transformers folder (it has modules.json), not an LLM: {expected}")
    try:
        architectures = atomic.read_json((path / "config.json")).get("architectures") or []
    except (json.JSONDecodeError, AttributeError) as err:
        raise ValueError(f"{path / 'config.json'} is not a JSON object: {err}") from err
    if architectures and not any(a.endswith(CAUSAL_LM_SUFFIXES) for a in architectures):
        raise ValueError(f"{path / 'config.json'}: architectures {architectures} has no causal LM "
                         f"(a name ending in {' or '.join(CAUSAL_LM_SUFFIXES)}): {expected}")


def load_llm(path: str | Path | None = None, dtype: torch.dtype | str = "auto", device: str = "cpu",
             system_prompt: str | None = None, question_first: bool = False) -> LLM:
    """Load a local causal LM (None: the bundled SmolLM2) with every base weight frozen, in `dtype` (a torch dtype
    or its name; "auto": `hardware.resolve_llm_dtype`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if isinstance(dtype, str):
        dtype = getattr(torch, resolve_llm_dtype(dtype, device))
    folder = bundled_model_dir() if path is None else Path(path)
    check_model_dir(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, device_map=device)
    return LLM(model, tokenizer, system_prompt=system_prompt, question_first=question_first)


# ---------------------------------------------------------------------------------------------------------------
# Prompt layout


@dataclass(frozen=True)
class PromptTemplate:
    """Token ids around the user content, and the end-of-turn ids that follow a training answer."""

    prefix: list[int]
    suffix: list[int]
    end_of_turn: list[int]
    separator: str = "\n"


def _encode(tokenizer: PreTrainedTokenizerBase, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False).input_ids if text else []


def _split_once(text: str, placeholder: str) -> tuple[str, str]:
    parts = text.split(placeholder)
    if len(parts) != 2:
        raise ValueError(f"the chat template renders the placeholder {len(parts) - 1} times, expected once")
    return parts[0], parts[1]


def build_template(tokenizer: PreTrainedTokenizerBase, system_prompt: str | None = None) -> PromptTemplate:
    """The prompt layout for `tokenizer`: its chat template if it has one, else [BOS] ... [EOS]."""
    if not tokenizer.chat_template:
        bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        return PromptTemplate(prefix=bos, suffix=[], end_of_turn=[tokenizer.eos_token_id])
    messages = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    messages.append({"role": "user", "content": USER_PLACEHOLDER})
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    before, after = _split_once(prompt, USER_PLACEHOLDER)
    full = tokenizer.apply_chat_template(messages + [{"role": "assistant", "content": ANSWER_PLACEHOLDER}],
                                         tokenize=False)
    end_of_turn = _split_once(full, ANSWER_PLACEHOLDER)[1].strip() or tokenizer.eos_token
    return PromptTemplate(_encode(tokenizer, before), _encode(tokenizer, after), _encode(tokenizer, end_of_turn))


@dataclass
class PromptBatch:
    """A left-padded batch of prompts. `token_ids` holds SOFT_TOKEN at soft-prompt positions (for inspection)."""

    inputs_embeds: Tensor  # [B, T, H], model dtype
    attention_mask: Tensor  # [B, T]
    position_ids: Tensor  # [B, T]
    token_ids: Tensor  # [B, T]
    labels: Tensor | None  # [B, T]: answer ids, IGNORE_INDEX elsewhere; None without answers
    answer_span: int  # the answers all lie in the last `answer_span` positions


@contextmanager
def _eval_mode(module: torch.nn.Module) -> Iterator[None]:
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)


# ---------------------------------------------------------------------------------------------------------------
# The wrapper


class LLM(torch.nn.Module):
    """A causal LM and its tokenizer, with soft-prompt-aware loss and greedy generation."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, system_prompt: str | None = None,
                 question_first: bool = False):
        super().__init__()
        self.model = model.requires_grad_(False)
        self.tokenizer = tokenizer
        self.system_prompt = system_prompt
        self.question_first = question_first
        self.template = build_template(tokenizer, system_prompt)
        self.pad_id = next(i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0) if i is not None)
        self.stop_ids = self._stop_ids()
        self.eval()

    def _stop_ids(self) -> list[int]:
        """Ids that end generation: the generation config's and tokenizer's EOS, and a one-token end of turn."""
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        ids = configured if isinstance(configured, list) else [configured]
        ids = ids + [self.tokenizer.eos_token_id]
        if len(self.template.end_of_turn) == 1:
            ids += self.template.end_of_turn
        return sorted({i for i in ids if i is not None})

    @property
    def hidden_size(self) -> int:
        return self.model.get_input_embeddings().embedding_dim

    @property
    def device(self) -> torch.device:
        return self.model.get_input_embeddings().weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.get_input_embeddings().weight.dtype

    def embed(self, ids: Tensor) -> Tensor:
        """Input embeddings of token ids."""
        return self.model.get_input_embeddings()(ids.to(self.device))

    def n_tokens(self, texts: Sequence[str]) -> list[int]:
        """Number of tokens of each text (no special tokens added)."""
        return [len(ids) for ids in self.tokenizer(list(texts), add_special_tokens=False).input_ids]

    # -- building inputs ---------------------------------------------------------------------------------------

    def _prompt_ids(self, graph_texts: Sequence[str], questions: Sequence[str], max_txt_len: int) -> list[list[int]]:
        """Per sample: the token ids after the soft tokens, through the generation prompt."""
        graphs = self.tokenizer(list(graph_texts), add_special_tokens=False).input_ids
        sep = self.template.separator
        if self.question_first:  # {question}\n{graph}: the graph text truncated as in the default layout
            heads = self.tokenizer([q + sep for q in questions], add_special_tokens=False).input_ids
            return [h + g[:max_txt_len] + self.template.suffix for h, g in zip(heads, graphs)]
        tails = self.tokenizer([sep + q for q in questions], add_special_tokens=False).input_ids
        return [g[:max_txt_len] + t + self.template.suffix for g, t in zip(graphs, tails)]

    def _answer_ids(self, answers: Sequence[str], max_answer_len: int) -> list[list[int]]:
        ids = self.tokenizer(list(answers), add_special_tokens=False).input_ids
        return [a[:max_answer_len] + self.template.end_of_turn for a in ids]

    def build_batch(self, soft_prompt: Tensor | None, graph_texts: Sequence[str], questions: Sequence[str],
                    answers: Sequence[str] | None = None, max_txt_len: int = 512,
                    max_answer_len: int = 32) -> PromptBatch:
        """Embed and left-pad [prefix; soft; graph; question (swapped with `question_first`); suffix (; answer; end
        of turn)] for each sample: the soft prompt beside h_t = TextEmbedder([textualize(X*); x_q]) (paper eq. 22)."""
        n = len(questions)
        if n == 0 or len(graph_texts) != n or (answers is not None and len(answers) != n):
            raise ValueError("graph_texts, questions (and answers) must be non-empty and of the same length")
        soft = self._check_soft(soft_prompt, n)
        bodies = self._prompt_ids(graph_texts, questions, max_txt_len)
        targets = self._answer_ids(answers, max_answer_len) if answers is not None else [[] for _ in range(n)]
        n_soft = 0 if soft is None else soft.shape[1]
        rows = [self.template.prefix + [SOFT_TOKEN] * n_soft + body + target for body, target in zip(bodies, targets)]
        length = max(len(row) for row in rows)
        token_ids = torch.tensor([[self.pad_id] * (length - len(row)) + row for row in rows], device=self.device)
        attention_mask = torch.tensor([[0] * (length - len(row)) + [1] * len(row) for row in rows],
                                      device=self.device)
        inputs_embeds = self.embed(token_ids.clamp(min=0))
        if soft is not None:  # fill the soft slots in order, cast to the model dtype (gradients flow back)
            slots = (token_ids == SOFT_TOKEN).unsqueeze(-1)
            inputs_embeds = inputs_embeds.masked_scatter(slots, soft.to(inputs_embeds.dtype))
        labels = None
        if answers is not None:
            labels = torch.full_like(token_ids, IGNORE_INDEX)
            for i, target in enumerate(targets):
                labels[i, length - len(target):] = torch.tensor(target, device=self.device)
        return PromptBatch(inputs_embeds, attention_mask, (attention_mask.cumsum(-1) - 1).clamp(min=0), token_ids,
                           labels, max(len(t) for t in targets))

    def _check_soft(self, soft_prompt: Tensor | None, batch_size: int) -> Tensor | None:
        """Soft prompt as [B, n, H] on the model's device ([B, H] counts as n = 1)."""
        if soft_prompt is None:
            return None
        soft = soft_prompt.unsqueeze(1) if soft_prompt.dim() == 2 else soft_prompt
        if soft.dim() != 3 or soft.shape[0] != batch_size or soft.shape[2] != self.hidden_size:
            raise ValueError(f"soft prompt of shape {tuple(soft_prompt.shape)}: expected "
                             f"[{batch_size}, n, {self.hidden_size}]")
        return soft.to(self.device)

    # -- training and inference --------------------------------------------------------------------------------

    def token_losses(self, soft_prompt: Tensor | None, graph_texts: Sequence[str], questions: Sequence[str],
                     answers: Sequence[str], max_txt_len: int = 512, max_answer_len: int = 32) -> tuple[Tensor, Tensor]:
        """Float32 cross-entropy of each answer position ([B, A]) and a mask of the positions that count ([B, A])."""
        batch = self.build_batch(soft_prompt, graph_texts, questions, answers, max_txt_len, max_answer_len)
        keep = batch.answer_span + 1  # left padding puts every answer at the end: only these logits are needed
        out = self.model(inputs_embeds=batch.inputs_embeds, attention_mask=batch.attention_mask,
                         position_ids=batch.position_ids, logits_to_keep=keep, use_cache=False)
        logits = out.logits[:, :-1].float()
        targets = batch.labels[:, -(keep - 1):]
        token_loss = F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=IGNORE_INDEX, reduction="none")
        return token_loss, (targets != IGNORE_INDEX).float()

    def loss(self, soft_prompt: Tensor | None, graph_texts: Sequence[str], questions: Sequence[str],
             answers: Sequence[str], max_txt_len: int = 512, max_answer_len: int = 32,
             reduction: str = "mean") -> Tensor:
        """-log p(Y | X*, x_q) = -sum_i log p(y_i | y_<i, [soft; h_t]) (paper eq. 23), per answer token (and end
        of turn), in float32.

        reduction "mean": mean over all answer tokens of the batch; "none": each sample's mean, shape [B].
        """
        if reduction not in ("mean", "none"):
            raise ValueError(f"reduction must be 'mean' or 'none', not {reduction!r}")
        token_loss, counted = self.token_losses(soft_prompt, graph_texts, questions, answers, max_txt_len,
                                                max_answer_len)
        if reduction == "none":
            return token_loss.sum(1) / counted.sum(1)
        return token_loss.sum() / counted.sum()

    @torch.no_grad()
    def generate(self, soft_prompt: Tensor | None, graph_texts: Sequence[str], questions: Sequence[str],
                 max_txt_len: int = 512, max_new_tokens: int = 32) -> list[str]:
        """Greedy answers (new text only, stripped), in eval mode."""
        from transformers import GenerationConfig

        batch = self.build_batch(soft_prompt, graph_texts, questions, None, max_txt_len)
        config = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                                  eos_token_id=self.stop_ids, pad_token_id=self.pad_id)
        with _eval_mode(self):
            out = self.model.generate(inputs_embeds=batch.inputs_embeds, attention_mask=batch.attention_mask,
                                      generation_config=config)
        return [self._decode(row) for row in out.tolist()]

    @torch.no_grad()
    def choice_logprobs(self, soft_prompt: Tensor | None, graph_texts: Sequence[str], questions: Sequence[str],
                        choices: Sequence[Sequence[str]], max_txt_len: int = 512) -> list[list[float]]:
        """log p(c | X*, x_q) = sum_i log p(c_i | c_<i, [soft; h_t]) of each sample's candidate answers c (their
        tokens and the end of turn, as training scores the answer), as lm-evaluation-harness scores multiple choice.
        The prompt runs once; every candidate continues from its key-value cache. In eval mode, in float32."""
        if len(choices) != len(questions) or not all(choices):
            raise ValueError("choices: one non-empty list of candidate answers per question")
        batch = self.build_batch(soft_prompt, graph_texts, questions, None, max_txt_len)
        owner = torch.tensor([i for i, cs in enumerate(choices) for _ in cs], device=self.device)
        answers = self._answer_ids([c for cs in choices for c in cs], max_answer_len=MAX_CHOICE_TOKENS)
        width = max(len(a) for a in answers)
        tokens = torch.tensor([a + [self.pad_id] * (width - len(a)) for a in answers], device=self.device)
        counted = torch.tensor([[1] * len(a) + [0] * (width - len(a)) for a in answers], device=self.device)
        with _eval_mode(self):
            prompt = self.model(inputs_embeds=batch.inputs_embeds, attention_mask=batch.attention_mask,
                                position_ids=batch.position_ids, use_cache=True, logits_to_keep=1)
            cache = prompt.cache
            cache.reorder_cache(owner)  # one copy of its sample's cache per candidate
            positions = batch.position_ids[owner, -1:] + 1 + torch.arange(width, device=self.device)
            out = self.model(inputs_embeds=self.embed(tokens.clamp(min=0)), cache=cache, use_cache=True,
                             attention_mask=torch.cat([batch.attention_mask[owner], counted], dim=1),
                             position_ids=positions)
        first = prompt.logits[owner, -1].float().log_softmax(-1).gather(-1, tokens[:, :1])
        rest = out.logits[:, :-1].float().log_softmax(-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
        sums = (torch.cat([first, rest], dim=1) * counted).sum(1).tolist()
        ends = list(accumulate(len(cs) for cs in choices))
        return [sums[end - len(cs):end] for cs, end in zip(choices, ends)]

    def _decode(self, ids: list[int]) -> str:
        """Text of generated ids up to the first stop id."""
        stops = [k for k, i in enumerate(ids) if i in self.stop_ids]
        return self.tokenizer.decode(ids[:stops[0]] if stops else ids, skip_special_tokens=True).strip()


# ---------------------------------------------------------------------------------------------------------------
# LoRA and parameter bookkeeping


def apply_lora(llm: LLM, r: int = 8, alpha: int = 16, dropout: float = 0.05,
               target_modules: Sequence[str] = ("q_proj", "v_proj")) -> LLM:
    """Wrap the model with peft LoRA adapters (fp32, trainable); the frozen base keeps its dtype. In place."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(target_modules),
                        bias="none", task_type="CAUSAL_LM")
    llm.model = get_peft_model(llm.model, config, autocast_adapter_dtype=True)
    for param in trainable_parameters(llm.model):
        param.data = param.data.float()
    return llm


def trainable_parameters(module: torch.nn.Module) -> list[torch.nn.Parameter]:
    """Parameters with requires_grad set."""
    return [p for p in module.parameters() if p.requires_grad]


def count_parameters(module: torch.nn.Module) -> tuple[int, int]:
    """(trainable, total) number of parameters."""
    return sum(p.numel() for p in trainable_parameters(module)), sum(p.numel() for p in module.parameters())


def trainable_state(module: torch.nn.Module) -> dict[str, Tensor]:
    """Copies of the weights that training changes (those with requires_grad), by state-dict name."""
    names = {name for name, p in module.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in module.state_dict().items() if k in names}


def load_trainable_state(module: torch.nn.Module, state: dict[str, Tensor]) -> None:
    """Load `trainable_state`'s weights back; ValueError when a trainable weight is missing from `state`."""
    missing = {name for name, p in module.named_parameters() if p.requires_grad} - set(state)
    if missing:
        raise ValueError(f"checkpoint lacks trainable weights: {sorted(missing)[:5]}")
    module.load_state_dict(state, strict=False)
