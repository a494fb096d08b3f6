"""Reasoning speed: forward + backward of the cellular encoder against the GAT baseline, in ms per batch.

Run:  .venv/bin/python benchmarks/bench_reasoning.py [--out benchmarks/out/reasoning.csv]
A batch is 4 complexes, ExplaGraphs-sized (5 nodes, 4-5 edges, 0-1 2-cells) or synthetic-scene-sized
(12 nodes, 36 edges, 25 2-cells). Times are the median and the minimum over `--repeats` steps of
`model(batch).sum().backward()` (the minimum is the steadier number on a shared machine).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch

from toporag_lib.data.graph import TextualGraph
from toporag_lib.nn import build_encoder
from toporag_lib.topology import lift
from toporag_lib.topology.batching import ComplexData

SIZES = {"explagraphs": (5, (4, 5)), "scene": (12, (36, 36))}


def simple_connected_graph(num_nodes: int, num_edges: int, rng: np.random.Generator) -> TextualGraph:
    """A random recursive tree plus distinct random node pairs: simple, connected, |E| - |V| + 1 cycles."""
    pairs = {(int(rng.integers(i)), i) for i in range(1, num_nodes)}
    while len(pairs) < num_edges:
        a, b = sorted(map(int, rng.choice(num_nodes, size=2, replace=False)))
        pairs.add((a, b))
    return TextualGraph([f"n{i}" for i in range(num_nodes)], [(a, b, "r") for a, b in sorted(pairs)])


def make_batch(kind: str, in_dim: int, rng: np.random.Generator, count: int = 4) -> Batch:
    num_nodes, (low, high) = SIZES[kind]
    datas = []
    for _ in range(count):
        g = simple_connected_graph(num_nodes, int(rng.integers(low, high + 1)), rng)
        cc = lift(g, torch.randn(g.num_nodes, in_dim), torch.randn(g.num_edges, in_dim))
        datas.append(ComplexData.from_complex(cc))
    return Batch.from_data_list(datas)


def step_ms(model: torch.nn.Module, batch: Batch, repeats: int) -> tuple[float, float]:
    """Median and minimum milliseconds of one forward + backward."""
    times = []
    for i in range(repeats + 3):  # 3 warm-up steps
        start = time.perf_counter()
        model(batch).sum().backward()
        model.zero_grad(set_to_none=True)
        if i >= 3:
            times.append(1000 * (time.perf_counter() - start))
    return round(statistics.median(times), 2), round(min(times), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-dim", type=int, default=384, help="input feature size (all-MiniLM-L6-v2: 384)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", type=Path, help="also write the table as CSV here")
    args = parser.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    batches = {kind: make_batch(kind, args.in_dim, rng) for kind in SIZES}
    rows = []
    for kind, batch in batches.items():
        cells = f"{batch.num_nodes}/{int(batch.num_cells_1.sum())}/{int(batch.num_cells_2.sum())}"
        for hidden in args.hidden:
            for name in ("cellular", "gat"):
                model = build_encoder(name, args.in_dim, hidden, hidden, num_layers=2).train()
                rows.append({"batch": kind, "cells_0/1/2": cells, "hidden": hidden, "encoder": name,
                             "params": sum(p.numel() for p in model.parameters()),
                             **dict(zip(("median_ms", "min_ms"), step_ms(model, batch, args.repeats)))})
    print(f"torch threads: {torch.get_num_threads()}, in_dim {args.in_dim}, 2 layers, batch of 4")
    for row in rows:
        print("  ".join(f"{k}={v}" for k, v in row.items()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
