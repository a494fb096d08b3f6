"""What the topology costs outside the train step: one-off preprocessing per method, and lifting and retrieval
against graph size (time and memory). Notebook 06 and the benchmark scripts call this; the train step's own cost is
`study.step_costs`.

    times, memory = scaling_tables([10, 100, 1000], edges_per_node=3, repeats=3, queries=3)

Their figures are `toporag_lib.study.plots.loglog_plot` and `memory_plot`. The training side (transformers, the
LLM) is imported only where it is used, so the graph benchmarks stay light.
"""

from __future__ import annotations

import gc
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np
import pandas as pd
import torch

from toporag_lib.data.graph import TextualGraph
from toporag_lib.retrieval.by_method import retrieve
from toporag_lib.retrieval.retrieval_config import RetrievalConfig
from toporag_lib.topology.complex import CellComplex
from toporag_lib.topology.lifting import lift

if TYPE_CHECKING:
    from toporag_lib.training.train_config import TrainConfig

# The retrievals timed on random graphs: G-Retriever's and PyG's example's top-k (3 nodes, 3 edges) and edge cost.
TIMED_TOPORAG = RetrievalConfig("toporag", k0=3, k1=3, k2=3)
TIMED_GRETRIEVER = RetrievalConfig("gretriever", k0=3, k1=3)
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
    ops = {TOPORAG: lambda q: retrieve(case.cc, q, TIMED_TOPORAG),
           GRETRIEVER: lambda q: retrieve(case.cc, q, TIMED_GRETRIEVER)}
    if with_pyg:
        from torch_geometric.llm.utils.backend_utils import retrieval_via_pcst

        data, nodes, edges = pyg_inputs(case.graph, case.cc)
        k0, k1, cost_e = TIMED_GRETRIEVER.k0, TIMED_GRETRIEVER.k1, TIMED_GRETRIEVER.cost_e
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
    `train_questions`, stage by stage as the trainer runs them (`preprocess.prepare`, then
    `examples.build_examples`): embedding every text into an empty cache (model already loaded), lifting (counted
    only for methods that read 2-cells), retrieval and packaging."""
    from toporag_lib.data import load_dataset
    from toporag_lib.embed import TextEncoder
    from toporag_lib.study.experiments import method_config
    from toporag_lib.retrieval.retriever import make_retriever
    from toporag_lib.training.examples import build_examples
    from toporag_lib.training.preprocess import prepare
    from toporag_lib.training.trainer import limited

    configs = [method_config(m, dataset, overrides) for m in methods]
    full = load_dataset(dataset, **configs[0].dataset_options)
    rows, loaded = [], None
    for method, config in zip(methods, configs):
        part = full.take(limited(full.split["train"], config.limits.train, config.seed))
        stages: dict[str, float] = {}
        with tempfile.TemporaryDirectory() as cache:
            encoder = TextEncoder(config.encoder_path, batching=config.embedding_batching, cache=cache,
                                  progress=False, loaded=loaded)
            loaded = encoder.model  # loaded outside the timing, once
            prepared = prepare(part, encoder, edge_text=config.edge_text, lift=config.lift, progress=False,
                               timings=stages)
        _, retrieval = _seconds(lambda: build_examples(prepared, range(len(part)), make_retriever(config.retrieval),
                                                       config.graph_text, config.question_suffix, progress=False))
        lifting = stages["lifting_s"] if uses_cells(config) else 0.0
        total = stages["embedding_s"] + lifting + retrieval
        rows.append({"method": method, "questions": len(part), "graphs": len(prepared.complexes),
                     "embedding_s": stages["embedding_s"], "lifting_s": lifting, "retrieval_s": retrieval,
                     "preprocessing_s": total, "train_split_s": total * train_questions / len(part)})
    return pd.DataFrame(rows)
