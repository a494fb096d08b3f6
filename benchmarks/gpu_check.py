"""Train steps of TopoRAG and G-Retriever with a Llama-2-7B-shaped LLM made in code, beside the paper's Table 7.

The LLM has Llama-2-7B's shape (hidden 4096, 32 layers, 32 heads, MLP 11008) and random bf16 weights on the GPU:
a step's time and memory do not depend on the weights, so nothing is downloaded. Its tokenizer is the bundled
SmolLM2's, whose 49,152 ids need a larger embedding than Llama-2's 32,000 (+1.4% parameters, said in the output).
Both methods share the frozen LLM and take turns on the same ExplaGraphs batches (`step_costs.step_runners`);
printed: seconds per step, minutes per ExplaGraphs epoch (its training split / batch size steps) and the peak
GPU memory of a step, beside the paper's 3.0 (TopoRAG) and 2.6 (G-Retriever) minutes on two A6000s.

    python benchmarks/gpu_check.py [--steps 6 --warmup 2 --batch-size 8]    # needs CUDA (gpu_check.sh runs it)
    python benchmarks/gpu_check.py --cpu-smoke                              # a tiny Llama on the CPU, 2 steps
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from toporag_lib.generation.bundled import bundled_model_dir
from toporag_lib.generation.llm import LLM
from toporag_lib.study.efficiency import MB
from toporag_lib.study.step_costs import (
    STEP_METHODS,
    epoch_table,
    interleaved_step_times,
    step_overrides,
    step_runners,
)
from toporag_lib.training.train_config import PAPER_SETTINGS

LLAMA2_7B = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
             "intermediate_size": 11008, "vocab_size": 32000, "max_position_embeddings": 4096}
TINY = {**LLAMA2_7B, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
        "intermediate_size": 128}
PAPER_MINUTES = {"TopoRAG": 3.0, "G-Retriever": 2.6}  # Table 7: minutes per ExplaGraphs epoch, two A6000s


@dataclass(frozen=True)
class Check:
    """What one run measures: the LLM's shape, where, and how many steps of which batch size."""

    name: str
    shape: dict[str, int]
    device: str
    dtype: torch.dtype
    batch_size: int
    warmup: int
    steps: int
    encoder_path: str | None = None  # None: the bundled sentence encoder
    tokenizer_path: str | None = None  # None: the bundled SmolLM2's tokenizer


def make_llm(shape: dict[str, int], device: str, dtype: torch.dtype, tokenizer_path: str | None = None) -> LLM:
    """A randomly initialised Llama of `shape` built directly on `device` in `dtype`, with SmolLM2's tokenizer (or
    the one in `tokenizer_path`)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path or bundled_model_dir())
    config = LlamaConfig(**{**shape, "vocab_size": max(shape["vocab_size"], len(tokenizer))},
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(default)
    return LLM(model, tokenizer)


def overrides(check: Check) -> dict[str, Any]:
    """The paper's training settings (as the gpu-paper profile's notebook 06) for `steps + warmup` batches."""
    options = {key: value for key, value in PAPER_SETTINGS.items() if key != "batch_size"}
    options |= {"device": check.device, "encoder_path": check.encoder_path,
                "llm_dtype": str(check.dtype).removeprefix("torch.")}
    return step_overrides(check.batch_size, check.warmup + check.steps, **options)


def peak_memory_mb(runner, step: int) -> float:
    """Peak GPU memory allocated during one more train step (NaN off CUDA)."""
    if not runner.config.device.startswith("cuda"):
        return float("nan")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    runner.step(step)
    return torch.cuda.max_memory_allocated() / MB


def run_check(check: Check) -> pd.DataFrame:
    """Time both methods' steps on one shared LLM; one row per method with s/step, min/epoch and peak memory."""
    from toporag_lib.data import load_dataset

    start = time.perf_counter()
    llm = make_llm(check.shape, check.device, check.dtype, check.tokenizer_path)
    built = time.perf_counter() - start
    runners = step_runners(STEP_METHODS, "explagraphs", overrides(check), llm=llm)
    times = interleaved_step_times(runners, check.warmup, check.steps)
    train_questions = len(load_dataset("explagraphs").split["train"])
    table = epoch_table(times, train_questions, check.batch_size)
    last = check.warmup + check.steps - 1  # re-run the last batch for memory (the timing has seen every batch)
    table["peak_gpu_mb"] = [peak_memory_mb(runners[m], last) for m in table.method]
    table["paper_minutes_per_epoch"] = table.method.map(PAPER_MINUTES)
    table["llm_params_m"] = sum(p.numel() for p in llm.parameters()) / 1e6
    table["llm_vocab"] = llm.model.config.vocab_size
    table["llm_build_s"] = built
    return table


def report(table: pd.DataFrame, check: Check) -> str:
    """The table beside the paper's Table 7, and the two ratios."""
    columns = ["method", "seconds_per_step", "steps_per_epoch", "minutes_per_epoch", "paper_minutes_per_epoch",
               "peak_gpu_mb", "ratio_vs_G-Retriever"]
    by_method = table.set_index("method")
    ours = by_method.loc["TopoRAG", "minutes_per_epoch"] / by_method.loc["G-Retriever", "minutes_per_epoch"]
    paper = PAPER_MINUTES["TopoRAG"] / PAPER_MINUTES["G-Retriever"]
    return "\n".join([
        f"LLM: {check.name} {check.shape} (vocab {table.llm_vocab.iloc[0]}), {table.llm_params_m.iloc[0]:.0f}M "
        f"params, {check.dtype} on {check.device}, built in {table.llm_build_s.iloc[0]:.1f} s; batch size "
        f"{check.batch_size}, {check.steps} timed steps after {check.warmup} warm-up",
        table[columns].round(3).to_string(index=False),
        f"TopoRAG / G-Retriever per epoch: {ours:.3f} here, {paper:.3f} in the paper's Table 7 (two A6000s)"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-smoke", action="store_true", help="a tiny Llama on the CPU, 2 steps")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=PAPER_SETTINGS["batch_size"])
    parser.add_argument("--encoder", default=None, help="sentence encoder folder (default: the bundled one)")
    args = parser.parse_args(argv)
    if args.cpu_smoke:
        check = Check("tiny Llama", TINY, "cpu", torch.float32, batch_size=2, warmup=0, steps=2, encoder_path=args.encoder)
    elif not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run gpu_check.py on a GPU machine, or with --cpu-smoke here")
    else:
        check = Check("Llama-2-7B-shaped", LLAMA2_7B, "cuda", torch.bfloat16, args.batch_size, args.warmup, args.steps, args.encoder)
    print(report(run_check(check), check))


if __name__ == "__main__":
    main()
