"""What TopoRAG costs against G-Retriever: train-step time and memory, one-off preprocessing, and lifting and
retrieval against graph size. Notebook 06 and the benchmark scripts call this.

    runners = step_runners(STEP_METHODS, "explagraphs", step_overrides(batch_size=4, num_batches=8))
    times = interleaved_step_times(runners, warmup=2, steps=6)      # one row per timed step and method
    epoch_table(times, train_questions=1659, batch_size=4)          # s/step, minutes per epoch, ratios

    times, memory = scaling_tables([10, 100, 1000], edges_per_node=3, repeats=3, queries=3)

Their figures are `toporag_lib.study.plots.loglog_plot` and `memory_plot`.

Peak memory of a train step is measured in a fresh interpreter per method (`step_memory_in_subprocess`): the
kernel's high-water mark (VmHWM) is reset after loading, so the peak is the steps' own, not the loading's.
The training side (transformers, the LLM) is imported only where it is used, so the graph benchmarks stay light.
"""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np
import pandas as pd
import torch

from toporag_lib.data.graph import TextualGraph
from toporag_lib.retrieval.methods import retrieve
from toporag_lib.topology.complex import CellComplex
from toporag_lib.topology.lifting import lift

if TYPE_CHECKING:
    from toporag_lib.generation.llm import LLM
    from toporag_lib.generation.soft_prompt import TopoRAGModel
    from toporag_lib.training.examples import Example
    from toporag_lib.training.trainer import TrainConfig

REFERENCE = "G-Retriever"
STEP_METHODS = ("G-Retriever", "TopoRAG")
RETRIEVAL_PARAMS = {"k0": 3, "k1": 3, "k2": 3, "c2": 1.0, "cost_e": 0.5}  # G-Retriever's and PyG's: k0, k1, cost_e
LIFT, LIFT_INDEX, CYCLE_BASIS = "lift (BFS)", "lift + B1, B2, indices", "networkx.cycle_basis"
TOPORAG, GRETRIEVER, PYG = "TopoRAG retrieval", "G-Retriever retrieval (ours)", "PyG retrieval_via_pcst"
MB = 2**20


# ---------------------------------------------------------------------------------------------------------------
# Timing and fits


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall time of `run()`, with the garbage collector paused while timing (as timeit does)."""
    times = []
    for _ in range(repeats):
        gc.disable()
        try:
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return float(np.median(times))


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x: the exponent b of y ~ a x^b."""
    if len(x) < 2:
        return float("nan")
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def predicted_seconds(sizes: Sequence[int], seconds: Sequence[float], size: int) -> float:
    """Time at `size` extrapolated from the last two measurements, assuming at least linear growth."""
    slope = max(1.0, loglog_slope(sizes[-2:], seconds[-2:])) if len(sizes) > 1 else 1.0
    return seconds[-1] * (size / sizes[-1]) ** slope


# ---------------------------------------------------------------------------------------------------------------
# Random graphs


def random_multigraph(num_nodes: int, num_edges: int, rng: np.random.Generator,
                      connected: bool = True) -> TextualGraph:
    """A random multigraph (self-loops and parallel edges allowed); when `connected`, it contains a random
    recursive tree and the other edges are uniformly random; the edge order is shuffled."""
    tree = [(int(rng.integers(i)), i) for i in range(1, num_nodes)] if connected else []
    extra = [tuple(map(int, pair)) for pair in rng.integers(0, num_nodes, size=(num_edges - len(tree), 2))]
    pairs = [(tree + extra)[i] for i in rng.permutation(num_edges)]
    return TextualGraph([f"entity {i}" for i in range(num_nodes)], [(a, b, "relation") for a, b in pairs])


def random_features(graph: TextualGraph, dim: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian node and edge features, standing in for sentence embeddings."""
    return (torch.randn(graph.num_nodes, dim, generator=generator),
            torch.randn(graph.num_edges, dim, generator=generator))


def simple_nx(graph: TextualGraph) -> nx.Graph:
    """The simple undirected graph underneath `graph` (what networkx.cycle_basis takes)."""
    simple = nx.Graph()
    simple.add_nodes_from(range(graph.num_nodes))
    simple.add_edges_from((s, d) for s, d, _ in graph.edges if s != d)
    return simple


def build_all(cc: CellComplex, with_edge_pairs: bool = True) -> CellComplex:
    """Force B1, B2 and the index tensors (the edge-edge adjacency only when asked)."""
    cc.boundary(1), cc.boundary(2), cc.incidence_index(1), cc.incidence_index(2), cc.upper_adjacency_index(0)
    if with_edge_pairs:
        cc.upper_adjacency_index(1)
    return cc


def pyg_inputs(graph: TextualGraph, cc: CellComplex) -> tuple[Any, pd.DataFrame, pd.DataFrame]:
    """The Data object and node and edge tables that PyTorch Geometric's `retrieval_via_pcst` takes."""
    from torch_geometric.data import Data

    data = Data(x=cc.z0, edge_index=graph.edge_index, edge_attr=cc.z1, node_idx=np.arange(graph.num_nodes),
                edge_idx=np.arange(graph.num_edges))
    nodes = pd.DataFrame({"node_id": range(graph.num_nodes), "node_attr": graph.nodes})
    edges = pd.DataFrame({"src": cc.edge_src, "edge_attr": graph.edge_texts, "dst": cc.edge_dst})
    return data, nodes, edges


# ---------------------------------------------------------------------------------------------------------------
# Lifting and retrieval against graph size


@dataclass
class ScalingCase:
    """One random graph with features, its complex and a few random queries."""

    graph: TextualGraph
    cc: CellComplex
    queries: list[torch.Tensor]

    @classmethod
    def make(cls, num_nodes: int, num_edges: int, dim: int, queries: int, seed: int) -> ScalingCase:
        graph = random_multigraph(num_nodes, num_edges, np.random.default_rng(seed))
        generator = torch.Generator().manual_seed(seed)
        cc = lift(graph, *random_features(graph, dim, generator))
        return cls(graph, cc, [torch.randn(dim, generator=generator) for _ in range(queries)])

    def row(self) -> dict[str, int]:
        return {"nodes": self.graph.num_nodes, "edges": self.graph.num_edges, "cells2": self.cc.num_cells(2)}


def graph_operations(case: ScalingCase) -> dict[str, Callable[[], object]]:
    """The one-off work per graph: our lift, with its matrices, and networkx's cycle basis for reference."""
    simple = simple_nx(case.graph)
    return {LIFT: lambda: lift(case.graph), LIFT_INDEX: lambda: build_all(lift(case.graph)),
            CYCLE_BASIS: lambda: nx.cycle_basis(simple)}


def query_operations(case: ScalingCase, with_pyg: bool) -> dict[str, Callable[[torch.Tensor], object]]:
    """The work per query on a lifted graph: both retrievals, and PyG's when asked."""
    k0, k1, cost_e = RETRIEVAL_PARAMS["k0"], RETRIEVAL_PARAMS["k1"], RETRIEVAL_PARAMS["cost_e"]
    ops = {TOPORAG: lambda q: retrieve(case.cc, q, "toporag", **RETRIEVAL_PARAMS),
           GRETRIEVER: lambda q: retrieve(case.cc, q, "gretriever", k0=k0, k1=k1, cost_e=cost_e)}
    if with_pyg:
        from torch_geometric.llm.utils.backend_utils import retrieval_via_pcst

        data, nodes, edges = pyg_inputs(case.graph, case.cc)
        ops[PYG] = lambda q: retrieval_via_pcst(data, q, nodes, edges, topk=k0, topk_e=k1, cost_e=cost_e)
    return ops


def time_case(case: ScalingCase, repeats: int, with_pyg: bool) -> list[dict]:
    """Median seconds per call of every operation on one graph (retrievals: median over the queries)."""
    rows = [{**case.row(), "what": what, "seconds": median_seconds(run, repeats)}
            for what, run in graph_operations(case).items()]
    for what, run in query_operations(case, with_pyg).items():
        per_query = [median_seconds(lambda: run(q), repeats) for q in case.queries]
        rows.append({**case.row(), "what": what, "seconds": float(np.median(per_query))})
    return rows


def peak_extra_bytes(run: Callable[[], object]) -> int:
    """Peak bytes that `run()` allocates on top of what was allocated before (Python objects and numpy arrays;
    torch's own allocator is not traced)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        gc.collect()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        if started:
            tracemalloc.stop()


def memory_case(case: ScalingCase) -> list[dict]:
    """Peak extra memory of lifting (with and without matrices) and of one query of each retrieval (the query
    after a first one, so the complex's one-off caches are not counted per query)."""
    ops = graph_operations(case)
    rows = [{**case.row(), "what": what, "extra_mb": peak_extra_bytes(ops[what]) / MB} for what in (LIFT, LIFT_INDEX)]
    for what, run in query_operations(case, with_pyg=False).items():
        run(case.queries[0])
        rows.append({**case.row(), "what": what, "extra_mb": peak_extra_bytes(lambda: run(case.queries[-1])) / MB})
    return rows


def scaling_tables(sizes: Sequence[int], edges_per_node: float = 3.0, repeats: int = 3, queries: int = 3,
                   dim: int = 384, seed: int = 0, pyg_limit_s: float = 1.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seconds per call and peak extra memory per operation on random graphs of each size (|E| = edges_per_node
    |V|). PyG's retrieval is timed while its extrapolated time per call stays under `pyg_limit_s`."""
    times, memory, pyg_sizes, pyg_seconds = [], [], [], []
    for k, n in enumerate(sorted(sizes)):
        case = ScalingCase.make(n, round(edges_per_node * n), dim, queries, seed + k)
        with_pyg = not pyg_sizes or predicted_seconds(pyg_sizes, pyg_seconds, n) <= pyg_limit_s
        rows = time_case(case, repeats, with_pyg)
        times += rows
        memory += memory_case(case)
        if with_pyg:
            pyg_sizes.append(n)
            pyg_seconds.append(next(r["seconds"] for r in rows if r["what"] == PYG))
    return pd.DataFrame(times), pd.DataFrame(memory)


def slopes(table: pd.DataFrame, value: str = "seconds", min_nodes: int = 100) -> pd.Series:
    """Fitted log-log slope of `value` against nodes per operation, over graphs with at least `min_nodes` nodes."""
    large = table[table.nodes >= min_nodes]
    return large.groupby("what", sort=False).apply(lambda g: loglog_slope(g.nodes, g[value]), include_groups=False)


# ---------------------------------------------------------------------------------------------------------------
# Train steps: TopoRAG against G-Retriever on one LLM


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
# One-off preprocessing per method


def uses_cells(config: TrainConfig) -> bool:
    """Whether a method reads 2-cells (cellular encoder or TopoRAG retrieval), so that it needs the lift."""
    return config.model.encoder == "cellular" or config.retrieval.method == "toporag"


def _seconds(run: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = run()
    return result, time.perf_counter() - start


def preprocessing_table(methods: Sequence[str], dataset: str, overrides: dict[str, Any],
                        train_questions: int) -> pd.DataFrame:
    """One-off seconds per method on the training questions that `overrides` selects, and extrapolated to
    `train_questions`: embedding every text into an empty cache (model already loaded; the same texts for every
    method, so embedded once), lifting (only for methods that read 2-cells), retrieval and packaging."""
    from toporag_lib.data import load_dataset
    from toporag_lib.embed import TextEncoder, embed_graphs
    from toporag_lib.study.experiments import method_config
    from toporag_lib.training.examples import build_examples
    from toporag_lib.training.preprocess import PreparedDataset
    from toporag_lib.training.trainer import limited

    configs = [method_config(m, dataset, overrides) for m in methods]
    full = load_dataset(dataset, **configs[0].dataset_options)
    part = full.take(limited(full.split["train"], configs[0].limits.train, configs[0].seed))
    representatives, graph_of = part.distinct_graphs()
    graphs = [part[i].graph for i in representatives]
    with tempfile.TemporaryDirectory() as cache:
        encoder = TextEncoder(configs[0].encoder_path, cache=cache, progress=False)
        _ = encoder.model  # load it outside the timing
        (features, queries), embedding = _seconds(lambda: (embed_graphs(graphs, encoder),
                                                           encoder.encode([s.query for s in part])))
    rows = []
    for method, config in zip(methods, configs):
        complexes, lifting = _seconds(lambda: [lift(g, nodes, edges, **config.lift.to_dict())
                                               for g, (nodes, edges) in zip(graphs, features)])
        prepared = PreparedDataset(part, complexes, graph_of, queries, config.lift.to_dict())
        _, retrieval = _seconds(lambda: build_examples(prepared, range(len(part)), config.retrieval,
                                                       config.graph_text, config.question_suffix, progress=False))
        lifting = lifting if uses_cells(config) else 0.0
        total = embedding + lifting + retrieval
        rows.append({"method": method, "questions": len(part), "graphs": len(graphs), "embedding_s": embedding,
                     "lifting_s": lifting, "retrieval_s": retrieval, "preprocessing_s": total,
                     "train_split_s": total * train_questions / len(part)})
    return pd.DataFrame(rows)


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
    done = subprocess.run([sys.executable, "-m", "toporag_lib.study.efficiency", job], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"step memory of {method} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    """Entry point of `step_memory_in_subprocess`: one JSON job in, one JSON line out."""
    job = json.loads((argv or sys.argv[1:])[0])
    print(json.dumps(step_memory(job["method"], job["dataset"], job["overrides"], job["steps"])))


if __name__ == "__main__":
    main()
