"""Everything a run depends on, in one dataclass with its defaults written once (`TrainConfig`), saved beside
its outputs. `TrainConfig.from_dict` refuses unknown keys, wrong types and numbers that are not finite at every
depth (`toporag_lib.settings`), and values out of range (negative limits, Adam betas outside [0, 1), ...) when the
config is made, each by its field; `read_train_config` reads a JSON file strictly (a key given twice is refused)
and names the file in every error. A partial `retrieval` or `lift` is merged over the dataset's own
(`data.registry`; `--set retrieval.k2=0` changes k2 alone); `dataset_options` are checked against the dataset's
loader (its keyword arguments and their types).
"""

from __future__ import annotations

import inspect
import math
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toporag_lib.data.registry import dataset_spec
from toporag_lib.embed import EDGE_TEXTS, check_batching
from toporag_lib.generation.factory import ENGINES
from toporag_lib.generation.soft_prompt import ModelConfig
from toporag_lib.hardware import DTYPE_CHOICES, resolve_llm_dtype
from toporag_lib.retrieval.retrieval_config import FITTED_METHODS, RetrievalConfig, dataset_retrieval
from toporag_lib.settings import ConfigError, convert, from_dict, loads_config, merge, parse_overrides
from toporag_lib.topology.lifting import LiftConfig

SCHEDULES = ("cosine", "constant")
SELECTIONS = ("val_loss", "val_score")
PREPROCESS_PLACES = ("local", "dask")  # or a scheduler address, "tcp://host:8786"
SCHEDULER_SCHEMES = ("tcp://", "tls://", "ws://", "wss://", "inproc://", "ucx://")


def check_preprocess(preprocess: object, method: str, batching: object) -> None:
    """`TrainConfig.preprocess` names a place (`PREPROCESS_PLACES`) or a Dask scheduler address; the sharded path
    embeds each shard apart, so it needs vectors that depend on their text alone ("length" or "single" batching),
    and fits no retriever on the training split (SubgraphRAG, GNN-RAG)."""
    if not isinstance(preprocess, str) or not (preprocess in PREPROCESS_PLACES
                                               or preprocess.startswith(SCHEDULER_SCHEMES)):
        raise ConfigError(f"TrainConfig.preprocess={preprocess!r}: expected one of {list(PREPROCESS_PLACES)} or a "
                          "Dask scheduler address such as 'tcp://host:8786'")
    if preprocess == "local":
        return
    if method in FITTED_METHODS:
        raise ConfigError(f"TrainConfig.preprocess={preprocess!r}: retrieval {method!r} is fitted on the training "
                          "split, which the shards do not share; preprocess it with preprocess='local'")
    if batching not in ("length", "single"):
        raise ConfigError(f"TrainConfig.preprocess={preprocess!r} needs embedding_batching 'length' or 'single' "
                          f"(vectors that depend on their text alone), not {batching!r}")


def check_dataset_options(dataset: str, options: dict[str, Any]) -> None:
    """`TrainConfig.dataset_options` are keyword arguments of the dataset's loader (`DatasetSpec.loader`), of the
    types it declares (so `num_images` on ExplaGraphs, or a text where a count goes, is refused by name)."""
    loader = dataset_spec(dataset).load_function()
    parameters = inspect.signature(loader).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = sorted(set(options) - set(parameters))
    if unknown:
        raise ConfigError(f"TrainConfig.dataset_options: unknown key(s) {unknown} for dataset {dataset!r}; "
                          f"known: {list(parameters)}")
    hints = typing.get_type_hints(loader)
    for key, value in options.items():
        if key in hints:
            convert(hints[key], value, f"TrainConfig.dataset_options.{key}")


def check_number(where: str, value: object, least: float = 0, below: float | None = None,
                 most: float | None = None) -> None:
    """A finite number >= `least` (and < `below`, <= `most` where given), else a ConfigError naming `where`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{where}={value!r}: expected a finite number")
    if value < least:
        kind = "a non-negative number" if least == 0 else f"a number >= {least}"
        raise ConfigError(f"{where}={value!r}: expected {kind}")
    if (below is not None and value >= below) or (most is not None and value > most):
        bound = f"[{least}, {below})" if below is not None else f"[{least}, {most}]"
        raise ConfigError(f"{where}={value!r}: expected a number in {bound}")


SEED_RANGE = 2**32  # numpy's seeds are 0 .. 2**32 - 1 (`seeding.seed_everything`)


@dataclass
class Limits:
    """Questions per split: a seeded random subset of that size, or None for the whole split."""

    train: int | None = None
    val: int | None = None
    test: int | None = None


PAPER_SETTINGS: dict[str, Any] = {
    "epochs": 10, "batch_size": 8, "lr": 1e-5, "lora_lr": 1e-5, "patience": 2, "schedule": "cosine",
    "warmup_ratio": 0.1, "max_txt_len": 512, "max_new_tokens": 32, "model": {"hidden_dim": 1024, "num_layers": 2},
}
"""The paper's section 5.1 training settings (with G-Retriever's warm-up and cosine decay), as overrides of
`TrainConfig`'s defaults; the `gpu-paper` profile uses them with Llama-2-7B."""


@dataclass
class TrainConfig:
    """One run: data, retrieval, lifting, model, optimisation.

    The defaults are this project's CPU settings, which differ from the paper's (`PAPER_SETTINGS`) where measurement
    said so: a constant learning rate of 1e-3 for every trainable weight, no warm-up, one epoch. With the paper's
    warm-up and cosine decay the bundled 135M LLM learned nothing beyond the class prior in an epoch on ExplaGraphs
    (`results/lab_log.md`); lr 1e-5 is the paper's for a 7B LLM.
    """

    dataset: str = "explagraphs"
    dataset_options: dict[str, Any] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    retrieval: dict[str, Any] | RetrievalConfig | None = None  # None: the dataset's; a dict merges over it
    lift: dict[str, Any] | LiftConfig | None = None  # None: the dataset's; a dict merges over it
    edge_text: str | None = None  # an edge's feature: "relation" or "triple" (verbalised); None: the dataset's
    graph_text: bool = True
    question_suffix: str = ""
    encoder_path: str | None = None  # sentence encoder folder; None: bundled all-MiniLM-L6-v2
    embedding_batching: str | int = "length"  # `embed.TextEncoder`'s batching: "length", "single" or a batch size
    preprocess: str = "local"  # where examples are made: "local", "dask" (a LocalCluster) or a Dask scheduler address
    model: ModelConfig = field(default_factory=ModelConfig)
    llm_path: str | None = None  # None: bundled SmolLM2-135M-Instruct
    llm_dtype: str = "auto"  # "auto" (saved resolved): bf16 on CUDA and on CPUs with AMX, else fp32 (`hardware`)
    device: str = "cpu"
    epochs: int = 1
    batch_size: int = 4
    eval_batch_size: int = 8
    lr: float = 1e-3  # graph side (encoder, projector, virtual tokens)
    lora_lr: float = 1e-3  # LoRA adapters
    weight_decay: float = 0.05
    warmup_ratio: float = 0.0
    schedule: str = "constant"  # after the warm-up: "constant", or "cosine" decay to 0 (G-Retriever's, the paper's)
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.95])  # G-Retriever's and PyG's example's
    max_grad_norm: float = 0.1
    patience: int = 2
    select_by: str = "val_loss"  # or "val_score": the dataset's metric on validation (one generation pass per epoch)
    max_txt_len: int = 512
    max_new_tokens: int | None = None  # None: the dataset's (`DatasetSpec.max_new_tokens`; the paper's 32 but testbed)
    checkpoint_every: int = 50
    seed: int = 42
    train: bool = True  # False: inference only (zero-shot baselines)
    engine: str = "toporag"  # "pyg": PyTorch Geometric's GRetriever as an outside reference

    def __post_init__(self) -> None:
        try:
            spec = dataset_spec(self.dataset)
        except ValueError as err:
            raise ConfigError(f"TrainConfig.dataset: {err}") from None
        check_dataset_options(self.dataset, self.dataset_options)
        for name, kind in (("limits", Limits), ("model", ModelConfig)):
            if isinstance(getattr(self, name), dict):
                setattr(self, name, from_dict(kind, getattr(self, name), f"TrainConfig.{name}"))
        for name in ("train", "val", "test"):
            limit = getattr(self.limits, name)
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
                raise ConfigError(f"TrainConfig.limits.{name}={limit!r}: expected None (the whole split) or an "
                                  "int >= 0")
        if self.lift is None or isinstance(self.lift, dict):
            self.lift = from_dict(LiftConfig, {**spec.lift, **(self.lift or {})}, "TrainConfig.lift")
        if self.edge_text is None:
            self.edge_text = spec.edge_text
        if self.max_new_tokens is None:
            self.max_new_tokens = spec.max_new_tokens
        if self.retrieval is None or isinstance(self.retrieval, dict):
            changes = self.retrieval or {}
            self.retrieval = from_dict(RetrievalConfig, {**dataset_retrieval(self.dataset, self.dataset_options.get("version")).to_dict(), **changes},
                                       "TrainConfig.retrieval")
        choices = {"engine": ENGINES, "schedule": SCHEDULES, "select_by": SELECTIONS, "llm_dtype": DTYPE_CHOICES,
                   "edge_text": EDGE_TEXTS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"TrainConfig.{name}={getattr(self, name)!r}: expected one of {list(allowed)}")
        self.llm_dtype = resolve_llm_dtype(self.llm_dtype, self.device)  # what ran goes into config.json and the ledger
        try:
            check_batching(self.embedding_batching, "TrainConfig.embedding_batching")
        except ValueError as err:
            raise ConfigError(str(err)) from None
        check_preprocess(self.preprocess, self.retrieval.method, self.embedding_batching)
        for name in ("batch_size", "eval_batch_size", "checkpoint_every", "max_txt_len", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"TrainConfig.{name}={getattr(self, name)!r}: expected a positive int")
        for name in ("epochs", "patience", "lr", "lora_lr", "weight_decay", "max_grad_norm"):
            check_number(f"TrainConfig.{name}", getattr(self, name))
        check_number("TrainConfig.warmup_ratio", self.warmup_ratio, most=1)  # a fraction of the steps
        if not isinstance(self.adam_betas, (list, tuple)) or len(self.adam_betas) != 2:
            raise ConfigError(f"TrainConfig.adam_betas={self.adam_betas!r}: expected two numbers in [0, 1)")
        for i, beta in enumerate(self.adam_betas):
            check_number(f"TrainConfig.adam_betas[{i}]", beta, below=1)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < SEED_RANGE:
            raise ConfigError(f"TrainConfig.seed={self.seed!r}: expected an int in [0, 2**32)")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """A config from JSON-like values, checked at every depth (`retrieval` and `lift` dicts are checked when
        they are merged over the dataset's, in `__post_init__`)."""
        return from_dict(cls, values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_train_config(text: str, where: str, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """The config in the JSON `text` (read from `where`) with `key=value` overrides (`--set`): JSON that is not
    valid, not an object or gives a key twice, and every field `TrainConfig.from_dict` refuses, is a ConfigError
    that names `where` (and the overrides, when there are some) and the field."""
    source = where + (f" with --set {' '.join(overrides)}" if overrides else "")
    try:
        return TrainConfig.from_dict(merge(loads_config(text, where), parse_overrides(list(overrides))))
    except ConfigError as err:
        message = str(err)
        raise ConfigError(message if message.startswith(where) else f"{source}: {message}") from None
    except ValueError as err:  # the nested configs' own checks (`ModelConfig`, `LiftConfig`)
        raise ConfigError(f"{source}: {err}") from None


def read_train_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """`parse_train_config` of a JSON file (`python -m toporag_lib.training --config`)."""
    return parse_train_config(Path(path).read_text(), str(path), overrides)
