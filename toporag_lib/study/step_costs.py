"""What a train step costs: TopoRAG against G-Retriever, one LLM dtype against another, the LLM's FLOPs against
what the core can do, test-time generation, and peak memory. Notebook 06, `benchmarks/bench_train_step.py` and
`benchmarks/gpu_check.py` call this.

    runners = step_runners(STEP_METHODS, "explagraphs", step_overrides(batch_size=4, num_batches=8))
    times = interleaved_step_times(runners, warmup=2, steps=6)      # one row per timed step and runner
    epoch_table(times, train_questions=1659, batch_size=4)          # s/step, minutes per epoch, ratios
    peak_fraction(runners, times)                                   # FLOPs per step against a matmul's rate

Peak memory of a train step is measured in a fresh interpreter per method (`step_memory_in_subprocess`): the
kernel's high-water mark (VmHWM) is reset after loading, so the peak is the steps' own, not the loading's.
The training side (transformers, the LLM) is imported only where it is used.
"""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

from toporag_lib.study.efficiency import MB, median_seconds

if TYPE_CHECKING:
    from toporag_lib.generation.llm import LLM
    from toporag_lib.generation.soft_prompt import TopoRAGModel
    from toporag_lib.training.examples import Example
    from toporag_lib.training.train_config import TrainConfig

REFERENCE = "G-Retriever"
STEP_METHODS = ("G-Retriever", "TopoRAG")


@dataclass
class StepRunner:
    """One method's model, optimizer and batches in one LLM dtype; `step(i)` runs the trainer's step on batch i and
    times it."""

    method: str
    dtype: str
    config: TrainConfig
    model: TopoRAGModel
    optimizer: torch.optim.Optimizer
    batches: list[list[Example]]

    def step(self, i: int) -> dict[str, float]:
        """Wall seconds, and CPU seconds of this process (all its threads: robust to other processes' load)."""
        from toporag_lib.training.trainer import train_step

        start, cpu = time.perf_counter(), time.process_time()
        train_step(self.model, self.optimizer, self.batches[i], self.config)
        self._sync()
        return {"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}

    def generate(self, i: int) -> dict[str, float]:
        """Greedy answers to batch i as the trainer's test pass makes them: wall seconds, the batch's prompt tokens
        and the answer tokens generated."""
        from toporag_lib.generation.inputs import collate

        batch = collate(self.batches[i])
        start = time.perf_counter()
        answers = self.model.generate(batch, self.config.max_txt_len, self.config.max_new_tokens)
        self._sync()
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "answer_tokens": sum(self.model.llm.n_tokens(answers))}

    def _sync(self) -> None:
        if self.config.device.startswith("cuda"):
            torch.cuda.synchronize()

    def encoder_params(self) -> int:
        return sum(p.numel() for p in self.model.encoder.parameters()) if self.model.encoder is not None else 0


def step_overrides(batch_size: int, num_batches: int, **options: Any) -> dict[str, Any]:
    """TrainConfig overrides for a step benchmark: `num_batches` training batches, no validation or test."""
    return {"limits": {"train": batch_size * num_batches, "val": 0, "test": 0}, "batch_size": batch_size, **options}


def compared_dtypes(dtype: str) -> list[str]:
    """`dtype` (resolved, as a run uses it) and the one to hold it against: bfloat16, or float32 where it is bf16."""
    return [dtype, "float32" if dtype == "bfloat16" else "bfloat16"]


def runner_name(method: str, dtype: str, dtypes: Sequence[str]) -> str:
    return method if len(dtypes) < 2 else f"{method} [{dtype}]"


def step_runners(methods: Sequence[str], dataset: str, overrides: dict[str, Any], llm: LLM | None = None,
                 dtypes: Sequence[str] | None = None) -> dict[str, StepRunner]:
    """A runner per method (and per LLM dtype in `dtypes`, named "method [dtype]" when there are several; None: the
    config's) on the same questions, each built as the trainer builds it (`generation.build_model`,
    `trainer.make_optimizer`) with an LLM of its own; or all on the frozen `llm` when one is given (no LoRA then)."""
    from toporag_lib.generation.factory import build_model
    from toporag_lib.generation.soft_prompt import TopoRAGModel
    from toporag_lib.seeding import seed_everything
    from toporag_lib.study.experiments import method_config
    from toporag_lib.training.trainer import make_examples, make_optimizer

    configs = {m: method_config(m, dataset, overrides) for m in methods}
    dtypes = list(dtypes or [next(iter(configs.values())).llm_dtype])
    runners = {}
    for method, base in configs.items():
        (splits, in_dim), size = make_examples(base, progress=False), base.batch_size
        batches = [splits["train"][i:i + size] for i in range(0, len(splits["train"]), size)]
        for dtype in dtypes:
            config = method_config(method, dataset, {**overrides, "llm_dtype": dtype})
            if llm is None:
                model = build_model(config.engine, config.model, in_dim, llm_path=config.llm_path,
                                    llm_dtype=config.llm_dtype, device=config.device, seed=config.seed)
            elif config.model.lora or len(dtypes) > 1:
                raise ValueError(f"{method}: a shared LLM takes neither LoRA nor several dtypes")
            else:
                seed_everything(config.seed)
                model = TopoRAGModel(llm, in_dim, config.model)
            groups = model.parameter_groups(config.lr, config.lora_lr, config.weight_decay)
            optimizer = make_optimizer(groups, config, total_steps=len(batches))[0]
            runners[runner_name(method, config.llm_dtype, dtypes)] = StepRunner(method, config.llm_dtype, config,
                                                                                model, optimizer, batches)
    return runners


def interleaved_step_times(runners: dict[str, StepRunner], warmup: int, steps: int,
                           what: str = "step") -> pd.DataFrame:
    """Wall and CPU seconds of each timed train step (`what="step"`), or seconds and answer tokens of each
    generation pass (`what="generate"`), per runner. The runners take turns on the same batch, in an order that
    flips every step, so slow drifts of the machine and any first-or-second effect hit all of them alike."""
    rows, order = [], list(runners)
    for i in range(warmup + steps):
        for name in order if i % 2 == 0 else order[::-1]:
            runner = runners[name]
            timing = getattr(runner, what)(i)
            if i >= warmup:
                rows.append({"runner": name, "method": runner.method, "dtype": runner.dtype, "step": i - warmup,
                             "batch": i, **timing})
    return pd.DataFrame(rows)


def step_summary(times: pd.DataFrame, reference: str = REFERENCE) -> pd.DataFrame:
    """Median (and quartiles of) wall s/step per method, and the ratio to `reference`: of the medians, and the
    median of the per-step ratios (the same batch, taken one right after the other); the same ratio of the CPU
    seconds, which other processes' load does not inflate (on a GPU it counts only the host's share)."""
    wide = times.pivot(index="step", columns="method", values="seconds")
    cpu = times.pivot(index="step", columns="method", values="cpu_seconds").median()
    median = wide.median()
    return pd.DataFrame({
        "method": median.index,
        "seconds_per_step": median.values,
        "q25_seconds": wide.quantile(0.25).values,
        "q75_seconds": wide.quantile(0.75).values,
        "timed_steps": wide.count().values,
        f"ratio_vs_{reference}": (median / median[reference]).values,
        "paired_ratio": [float((wide[m] / wide[reference]).median()) for m in median.index],
        "cpu_seconds_per_step": cpu[median.index].values,
        f"cpu_ratio_vs_{reference}": (cpu[median.index] / cpu[reference]).values,
    })


def dtype_summary(times: pd.DataFrame, reference: str = "bfloat16") -> pd.DataFrame:
    """Per method and LLM dtype: median wall and CPU seconds per step, and the median over steps of the ratio to the
    same method's step in `reference` on the same batch (below 1: faster than `reference`)."""
    rows = []
    for method, group in times.groupby("method", sort=False):
        wide = group.pivot(index="step", columns="dtype", values="seconds")
        cpu = group.pivot(index="step", columns="dtype", values="cpu_seconds")
        for dtype in wide:
            rows.append({"method": method, "dtype": dtype, "seconds_per_step": float(wide[dtype].median()),
                         "cpu_seconds_per_step": float(cpu[dtype].median()), "timed_steps": int(wide[dtype].count()),
                         f"paired_ratio_vs_{reference}": float((wide[dtype] / wide[reference]).median())
                         if reference in wide else float("nan")})
    return pd.DataFrame(rows)


def generation_summary(times: pd.DataFrame) -> pd.DataFrame:
    """Per runner of `interleaved_step_times(..., what="generate")`: answer tokens per second over the timed
    batches, and median seconds per batch."""
    grouped = times.groupby(["method", "dtype"], sort=False)
    table = grouped.agg(batches=("seconds", "size"), seconds_per_batch=("seconds", "median"),
                        answer_tokens=("answer_tokens", "sum"), seconds=("seconds", "sum")).reset_index()
    table["answer_tokens_per_s"] = table.answer_tokens / table.seconds
    return table.drop(columns="seconds")


# ---------------------------------------------------------------------------------------------------------------
# The work of a train step against what the core can do


def step_flops(runner: StepRunner, i: int) -> dict[str, float]:
    """Floating-point operations of the LLM in train step i: the tokens the batch really holds ("useful") and the
    left-padded rectangle the kernels compute ("computed").

    Per token, a linear layer costs 2 x its weights forward, and as much backward to its input (the base weights are
    frozen, so no weight gradients; LoRA's are negligible); attention costs 4 T^2 d per layer forward and twice that
    backward; the LM head runs only on the answer positions. Encoder and projector are left out (well under 1%).
    """
    from toporag_lib.generation.inputs import collate

    llm, batch = runner.model.llm, collate(runner.batches[i])
    with torch.no_grad():
        prompt = llm.build_batch(runner.model.soft_prompt(batch), batch.texts, batch.questions, batch.labels,
                                 runner.config.max_txt_len)
    linear = sum(m.weight.numel() for name, m in llm.model.named_modules()
                 if isinstance(m, torch.nn.Linear) and not name.endswith("lm_head"))
    shape = llm.model.config
    width, layers = shape.hidden_size, shape.num_hidden_layers
    head = 2 * 2 * shape.vocab_size * width * (prompt.answer_span + 1) * len(batch)
    lengths = prompt.attention_mask.sum(1).tolist()
    padded = [prompt.attention_mask.shape[1]] * len(batch)

    def total(tokens: list[int]) -> float:
        return float(sum(2 * 2 * linear * t + 3 * 4 * t * t * width * layers for t in tokens) + head)

    return {"tokens": float(sum(lengths)), "padded_tokens": float(sum(padded)), "useful_flops": total(lengths),
            "computed_flops": total(padded)}


def matmul_rate(dtype: torch.dtype, size: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of a large square matmul in `dtype` on this process's threads: the practical peak that a train step's
    rate is set against, measured in the same process."""
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    a @ b  # warm the kernels
    return 2 * size**3 / median_seconds(lambda: a @ b, repeats)


def peak_fraction(runners: dict[str, StepRunner], times: pd.DataFrame) -> pd.DataFrame:
    """Per runner: the LLM's FLOPs per timed step (useful and computed, `step_flops`), the rate reached, and its
    fraction of this process's own matmul rate in the runner's dtype (`matmul_rate`)."""
    peaks: dict[str, float] = {}
    rows = []
    for name, runner in runners.items():
        peaks.setdefault(runner.dtype, matmul_rate(getattr(torch, runner.dtype)))
        mine = times[times.runner == name]
        work = pd.DataFrame([step_flops(runner, i) for i in mine.batch])
        seconds = float(mine.seconds.median())
        computed = float(work.computed_flops.median())
        rows.append({"runner": name, "method": runner.method, "dtype": runner.dtype, "seconds_per_step": seconds,
                     "tflop_per_step": computed / 1e12, "padding_share": 1 - float(work.tokens.sum()
                                                                                  / work.padded_tokens.sum()),
                     "gflop_per_s": computed / seconds / 1e9, "matmul_gflop_per_s": peaks[runner.dtype] / 1e9,
                     "fraction_of_peak": computed / seconds / peaks[runner.dtype]})
    return pd.DataFrame(rows)


def epoch_table(times: pd.DataFrame, train_questions: int, batch_size: int,
                reference: str = REFERENCE) -> pd.DataFrame:
    """`step_summary` with minutes per epoch: the median step times the steps an epoch of `train_questions`
    takes at `batch_size`."""
    steps_per_epoch = math.ceil(train_questions / batch_size)
    table = step_summary(times, reference)
    table.insert(5, "minutes_per_epoch", table.seconds_per_step * steps_per_epoch / 60)
    table.insert(5, "steps_per_epoch", steps_per_epoch)
    table.insert(5, "train_questions", train_questions)
    table.insert(5, "batch_size", batch_size)
    return table


# ---------------------------------------------------------------------------------------------------------------
# Peak memory of a train step, one fresh process per method


def proc_status_bytes(field: str) -> int:
    """A `kB` line of /proc/self/status (Linux), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak_rss() -> None:
    """Reset this process's resident-set high-water mark (VmHWM) to its current size (Linux >= 4.0)."""
    Path("/proc/self/clear_refs").write_text("5")


def step_memory(method: str, dataset: str, overrides: dict[str, Any], steps: int) -> dict[str, Any]:
    """Resident memory before the first step and at the peak of `steps` train steps (after loading everything),
    and on CUDA the peak of torch's allocator during the steps."""
    runner = step_runners([method], dataset, overrides)[method]
    cuda = runner.config.device.startswith("cuda")
    gc.collect()
    before = proc_status_bytes("VmRSS")
    reset_peak_rss()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    for i in range(steps):
        runner.step(i)
    peak = proc_status_bytes("VmHWM")
    return {"method": method, "rss_before_mb": before / MB, "peak_rss_mb": peak / MB,
            "extra_mb": (peak - before) / MB,
            "cuda_peak_mb": torch.cuda.max_memory_allocated() / MB if cuda else float("nan")}


def step_memory_in_subprocess(method: str, dataset: str, overrides: dict[str, Any], steps: int) -> dict[str, Any]:
    """`step_memory` in a fresh interpreter, so no other method's allocations linger in the measured process."""
    job = json.dumps({"method": method, "dataset": dataset, "overrides": overrides, "steps": steps})
    done = subprocess.run([sys.executable, "-m", "toporag_lib.study.step_costs", job], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"step memory of {method} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    """Entry point of `step_memory_in_subprocess`: one JSON job in, one JSON line out."""
    job = json.loads((argv or sys.argv[1:])[0])
    print(json.dumps(step_memory(job["method"], job["dataset"], job["overrides"], job["steps"])))


if __name__ == "__main__":
    main()
