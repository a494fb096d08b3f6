"""Embedding cache benchmark: embed every ExplaGraphs node and edge text cold (empty cache), then warm.

The warm run includes building a new TextEncoder, so it measures what a second notebook run pays.
Target: warm at least 10x faster than cold. The reference row embeds the same texts cold in batches of 64, which is
what encoding one text at a time (deterministic vectors) costs against batching.

    python benchmarks/bench_embed_cache.py [--dataset explagraphs] [--out benchmarks/out/embed_cache.csv]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from toporag_lib.data import load_dataset
from toporag_lib.embed import TextEncoder, embed_graphs


def timed_run(cache: Path, graphs, batch_size: int | None = None) -> float:
    start = time.perf_counter()
    embed_graphs(graphs, TextEncoder(cache=cache, batch_size=batch_size, progress=False))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="explagraphs")
    parser.add_argument("--out", default="benchmarks/out/embed_cache.csv")
    args = parser.parse_args()
    graphs = load_dataset(args.dataset).graphs
    texts = sum(g.num_nodes + g.num_edges for g in graphs)
    with tempfile.TemporaryDirectory() as cache:
        cold = timed_run(Path(cache), graphs)
        warm = min(timed_run(Path(cache), graphs) for _ in range(3))
    with tempfile.TemporaryDirectory() as cache:
        batched = timed_run(Path(cache), graphs, batch_size=64)
    row = {"dataset": args.dataset, "graphs": len(graphs), "texts": texts, "cold_s": round(cold, 3),
           "warm_s": round(warm, 3), "speedup": round(cold / warm, 1), "cold_batched_s": round(batched, 3),
           "one_at_a_time_cost": round(cold / batched, 2)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([row]).to_csv(args.out, index=False)
    print(pd.DataFrame([row]).to_string(index=False))


if __name__ == "__main__":
    main()
