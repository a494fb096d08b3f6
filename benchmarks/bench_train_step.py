"""Train-step and generation cost: TopoRAG against G-Retriever, and the LLM dtype `auto` picks against bfloat16.

Every (method, dtype) pair gets its own model, built as the trainer builds it; they take turns on the same
batches (the order flips every step, so machine load drifts hit all alike) and medians over the timed steps are
reported, with ratios taken on the same batch. Printed per dataset:
- TopoRAG / G-Retriever per dtype (the paper pays 15% more per epoch; target here: at most 5%);
- each dtype's step against bfloat16's (target on a CPU without native bf16: the auto dtype at most 1/4);
- test-time generation (batched greedy decoding, KV cache, stopping at the end of turn): answer tokens per second;
- the LLM's FLOPs per step (real and padded tokens) and the fraction of this process's own matmul rate in that
  dtype it reaches (target: at least 60%).
`--emulate-no-bf16` re-runs the script with torch's kernels held to AVX2 (`ATEN_CPU_CAPABILITY`, `ONEDNN_MAX_CPU_ISA`):
a CPU with native bf16 then measures what a CPU without it does.

    python benchmarks/bench_train_step.py [--datasets explagraphs synthetic_scenes] [--steps 3] [--emulate-no-bf16]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from toporag_lib import hardware
from toporag_lib.study.step_costs import (
    compared_dtypes,
    dtype_summary,
    generation_summary,
    interleaved_step_times,
    peak_fraction,
    step_overrides,
    step_runners,
    step_summary,
)

METHODS = ["G-Retriever", "TopoRAG", "G-Retriever + LoRA", "TopoRAG + LoRA"]
NO_BF16 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
OPTIONS = {"synthetic_scenes": {"num_images": 200}}


def show(title: str, table: pd.DataFrame) -> None:
    print(f"\n{title}\n{table.to_string(index=False, float_format=lambda x: f'{x:.3f}')}", flush=True)


def bench(dataset: str, methods: list[str], args: argparse.Namespace) -> None:
    dtypes = compared_dtypes(hardware.resolve_llm_dtype("auto"))
    overrides = step_overrides(args.batch_size, args.warmup + args.steps, dataset_options=OPTIONS.get(dataset, {}))
    runners = step_runners(methods, dataset, overrides, dtypes=dtypes)
    times = interleaved_step_times(runners, args.warmup, args.steps)
    generated = interleaved_step_times(runners, 0, args.generate_batches, what="generate")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        times.to_csv(args.out / f"{dataset}_steps.csv", index=False)
        generated.to_csv(args.out / f"{dataset}_generation.csv", index=False)
    print(f"\n== {dataset}: {args.steps} timed steps of batch {args.batch_size} after {args.warmup} untimed")
    for dtype in dtypes:
        part = times[times.dtype == dtype]
        for suffix in ("", " + LoRA"):
            reference, topo = f"G-Retriever{suffix}", f"TopoRAG{suffix}"
            if {reference, topo} <= set(part.method):
                row = step_summary(part[part.method.isin([reference, topo])], reference).set_index("method").loc[topo]
                print(f"{topo} / {reference} in {dtype}: {row[f'ratio_vs_{reference}']:.3f} (ratio of medians), "
                      f"{row.paired_ratio:.3f} (median of per-step ratios)")
    show(f"step time by dtype (auto is {dtypes[0]})", dtype_summary(times, reference="bfloat16"))
    show("the LLM's work per step against this process's matmul rate in the same dtype", peak_fraction(runners, times))
    show("test-time generation (greedy, KV cache, stops at the end of turn)", generation_summary(generated))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["explagraphs", "synthetic_scenes"])
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--generate-batches", type=int, default=1)
    parser.add_argument("--out", type=Path, help="a folder for the raw step and generation timings (CSV)")
    parser.add_argument("--emulate-no-bf16", action="store_true",
                        help="hold torch's kernels to AVX2, as on a CPU without native bf16")
    args = parser.parse_args()
    if args.emulate_no_bf16 and os.environ.get("ONEDNN_MAX_CPU_ISA") != NO_BF16["ONEDNN_MAX_CPU_ISA"]:
        argv = [a for a in sys.argv if a != "--emulate-no-bf16"]
        sys.exit(subprocess.run([sys.executable, *argv], env={**os.environ, **NO_BF16}).returncode)
    print(f"hardware: {hardware.describe()}; auto LLM dtype: {hardware.resolve_llm_dtype('auto')}")
    for dataset in args.datasets:
        bench(dataset, args.methods, args)


if __name__ == "__main__":
    main()
