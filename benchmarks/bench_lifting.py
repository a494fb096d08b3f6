"""Lifting speed: toporag_lib.topology.lifting against networkx.cycle_basis and TopoNetX, plus a size sweep.

Run on one core for stable numbers:  taskset -c 0 .venv/bin/python benchmarks/bench_lifting.py
Prints a table and writes it as CSV (`--out`, default benchmarks/out/lifting.csv). Times are medians over
`--repeats` runs. "lift" is `lift(graph)`; "lift+index" adds B1, B2 and all four index tensors (the
edge-edge upper adjacency has sum L(L-1) columns, so it is skipped where that is huge, e.g. DFS trees).
networkx is timed on a prebuilt nx.Graph; TopoNetX builds the same complex (`homology_cycle_cell_complex`)
and its signed incidence matrices B1 and B2.

Whole datasets (`x_networkx` column; targets: at most 3x on ExplaGraphs, under 30 s for the corpus):
ExplaGraphs' 2,766 graphs by per-graph `lift` and by `lift_many`, both with B1, B2 and the index tensors, and
a SceneGraphs-scale corpus (`--corpus-graphs` random multigraphs of 19 nodes and 68 edges, timed once).
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np

from toporag_lib.data import load_dataset
from toporag_lib.data.graph import TextualGraph
from toporag_lib.study.efficiency import (
    build_all,
    median_seconds,
    random_multigraph,
    simple_nx,
)
from toporag_lib.topology import CellComplex, lift, lift_many

EDGE_PAIR_LIMIT = 20_000_000


def edge_pairs(cc: CellComplex) -> int:
    lengths = cc.cell_lengths()
    return int((lengths * (lengths - 1)).sum())


def toponetx_lift() -> Callable[[nx.Graph], object] | None:
    try:
        from toponetx.transform import homology_cycle_cell_complex
    except ImportError:
        return None

    def run(simple: nx.Graph) -> object:
        cx = homology_cycle_cell_complex(simple)
        return cx.incidence_matrix(1), cx.incidence_matrix(2)

    return run


def row(case: str, method: str, graphs: list[TextualGraph], seconds: float, base: float | None,
        cc: CellComplex | None = None, networkx: float | None = None) -> dict:
    """One CSV row; times are per graph (`networkx`: seconds of networkx.cycle_basis over the same graphs)."""
    per_graph = seconds / len(graphs)
    items = None if cc is None else cc.num_cells(1) + int(cc.cell_lengths().sum())
    return {
        "case": case, "method": method, "graphs": len(graphs),
        "nodes": graphs[0].num_nodes, "edges": graphs[0].num_edges,
        "two_cells": "" if cc is None else cc.num_cells(2),
        "total_cycle_len": "" if cc is None else int(cc.cell_lengths().sum()),
        "ms_per_graph": round(per_graph * 1e3, 4),
        "x_toporag_lift+index": "" if base is None else round(per_graph / base, 2),
        "ns_per_edge_or_cycle_member": "" if items is None else round(per_graph * 1e9 / items, 1),
        "seconds": round(seconds, 4),
        "x_networkx": "" if networkx is None else round(seconds / networkx, 2),
        "cpu_seconds": "", "cpu_x_networkx": "",
    }


def compare(case: str, graphs: list[TextualGraph], repeats: int, toponetx) -> list[dict]:
    """toporag (lift, lift+index) vs networkx.cycle_basis vs TopoNetX on the same graphs."""
    simples = [simple_nx(g) for g in graphs]
    ours = median_seconds(lambda: [build_all(lift(g)) for g in graphs], repeats)
    base = ours / len(graphs)
    cc = lift(graphs[0])
    rows = [row(case, "toporag lift", graphs, median_seconds(lambda: [lift(g) for g in graphs], repeats), base, cc),
            row(case, "toporag lift+index", graphs, ours, base, cc),
            row(case, "networkx.cycle_basis", graphs,
                median_seconds(lambda: [nx.cycle_basis(s) for s in simples], repeats), base)]
    if toponetx is None:
        rows.append({**row(case, "toponetx complex+B1+B2", graphs, float("nan"), None), "ms_per_graph": "n/a"})
    else:
        topo_repeats = max(1, repeats // 5)
        rows.append(row(case, "toponetx complex+B1+B2", graphs,
                        median_seconds(lambda: [toponetx(s) for s in simples], topo_repeats), base))
    return rows


def trees(case: str, graph: TextualGraph, repeats: int) -> list[dict]:
    """The three spanning trees (and the minimum basis, once) on one graph."""
    rows = []
    for options in ({"tree": "bfs"}, {"tree": "dfs"}, {"tree": "random"}):
        cc = lift(graph, **options)
        full = edge_pairs(cc) <= EDGE_PAIR_LIMIT
        seconds = median_seconds(lambda: build_all(lift(graph, **options), full), repeats)
        label = "lift+index" if full else "lift+index (no edge-edge adjacency)"
        rows.append(row(case, f"toporag {options['tree']} {label}", [graph], seconds, None, cc))
    seconds = median_seconds(lambda: lift(graph, basis="minimum"), 1)
    rows.append(row(case, "toporag minimum basis (lift, 1 run)", [graph], seconds, None, lift(graph, basis="minimum")))
    return rows


def sweep(sizes: list[int], repeats: int, rng: np.random.Generator) -> list[dict]:
    """BFS lift+index on random multigraphs with |E| = 3|V|: time per (edge + cycle member) should stay flat."""
    rows = []
    for n in sizes:
        graph = random_multigraph(n, 3 * n, rng)
        seconds = median_seconds(lambda: build_all(lift(graph)), repeats)
        rows.append(row("sweep |E|=3|V|", "toporag lift+index", [graph], seconds, None, lift(graph)))
    return rows


def wall_and_cpu(run: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one `run()` (CPU time leaves out what other processes on the core take)."""
    cpu = time.process_time()
    wall = median_seconds(run, 1)
    return wall, time.process_time() - cpu


def whole_dataset(case: str, graphs: list[TextualGraph], repeats: int, per_graph: bool) -> list[dict]:
    """All of a dataset at once: lift_many+index (and per-graph lift+index) against networkx.cycle_basis, by wall
    and by CPU time; the methods take turns within each repeat, so load drifts hit all of them alike."""
    simples = [simple_nx(g) for g in graphs]
    runs = {"networkx.cycle_basis": lambda: [nx.cycle_basis(s) for s in simples],
            "toporag lift_many+index": lambda: [build_all(cc) for cc in lift_many(graphs)]}
    if per_graph:
        runs["toporag per-graph lift+index"] = lambda: [build_all(lift(g)) for g in graphs]
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            times[name].append(wall_and_cpu(run))
    (nx_wall, nx_cpu), cc = np.median(times["networkx.cycle_basis"], axis=0), lift(graphs[0])
    rows = []
    for name, measured in times.items():
        wall, cpu = np.median(measured, axis=0)
        rows.append({**row(case, name, graphs, float(wall), None, None if name.startswith("networkx") else cc, nx_wall),
                     "cpu_seconds": round(float(cpu), 4), "cpu_x_networkx": round(float(cpu / nx_cpu), 2)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/lifting.csv"))
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--small-graphs", type=int, default=500, help="ExplaGraphs-sized graphs per timing")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000, 10000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus-graphs", type=int, default=100_000, help="SceneGraphs-scale corpus size (0: skip)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    toponetx = toponetx_lift()
    small = [random_multigraph(5, 4, rng, connected=False) for _ in range(args.small_graphs)]
    webqsp = random_multigraph(1370, 4252, rng)
    rows = compare("ExplaGraphs-sized (5 nodes, 4 edges)", small, args.repeats, toponetx)
    rows += compare("WebQSP-scale (1370 nodes, 4252 edges)", [webqsp], args.repeats, toponetx)
    rows += trees("WebQSP-scale trees", webqsp, max(3, args.repeats // 3))
    rows += sweep(args.sizes, max(3, args.repeats // 3), rng)
    rows += whole_dataset("ExplaGraphs, all graphs", load_dataset("explagraphs").graphs, args.repeats, True)
    if args.corpus_graphs:
        corpus = [random_multigraph(19, 68, rng) for _ in range(args.corpus_graphs)]
        rows += whole_dataset(f"SceneGraphs-scale corpus ({args.corpus_graphs} graphs)", corpus, 1, False)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print_table(rows)
    print(f"\nwritten to {args.out}")


def print_table(rows: list[dict]) -> None:
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r[c]).ljust(widths[c]) for c in columns))


if __name__ == "__main__":
    main()
