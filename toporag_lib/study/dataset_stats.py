"""Dataset statistics: the paper's Table 4 (graphs, average nodes and edges) plus independent cycles."""

from __future__ import annotations

import pandas as pd

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.registry import dataset_spec
from toporag_lib.topology.lifting_many import lift_many


def per_graph_stats(dataset: QADataset) -> pd.DataFrame:
    """One row per distinct graph: nodes, edges, components, independent cycles (first Betti number)."""
    rows = []
    for i in dataset.distinct_graphs()[0]:
        g = dataset[i].graph
        rows.append({"dataset": dataset.name, "nodes": g.num_nodes, "edges": g.num_edges,
                     "components": g.num_components(), "independent_cycles": g.num_independent_cycles()})
    return pd.DataFrame(rows, columns=["dataset", "nodes", "edges", "components", "independent_cycles"])


def summary_row(dataset: QADataset, per_graph: pd.DataFrame) -> dict:
    """Table 4's columns for one dataset, with the paper's numbers beside ours where the paper has them."""
    paper = dataset_spec(dataset.name).paper_stats
    return {
        "dataset": dataset.name,
        "questions": len(dataset),
        "graphs": len(per_graph),
        "avg_nodes": round(per_graph.nodes.mean(), 2),
        "avg_edges": round(per_graph.edges.mean(), 2),
        "avg_independent_cycles": round(per_graph.independent_cycles.mean(), 2),
        "max_nodes": int(per_graph.nodes.max()),
        "dropped": dataset.dropped,
        "paper_graphs": paper.get("graphs"),
        "paper_avg_nodes": paper.get("avg_nodes"),
        "paper_avg_edges": paper.get("avg_edges"),
    }


def dataset_table(datasets: list[QADataset]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(Table 4 summary, per-graph statistics of all datasets)."""
    per_graph = [per_graph_stats(ds) for ds in datasets]
    table = pd.DataFrame([summary_row(ds, pg) for ds, pg in zip(datasets, per_graph)])
    return table, pd.concat(per_graph, ignore_index=True)


def lifting_stats(dataset: QADataset, variants: dict[str, dict], max_graphs: int | None = None
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lift each distinct graph under each variant (name -> `lift` options).

    Returns (one row per graph and variant: 2-cells, Betti number, extra parallel edges; one row per 2-cell and
    variant: its boundary length).
    """
    representatives, _ = dataset.distinct_graphs()
    graphs = [dataset[i].graph for i in representatives[:max_graphs]]
    per_graph, per_cell = [], []
    for name, options in variants.items():
        for k, cc in enumerate(lift_many(graphs, indices=False, **options)):
            summary = cc.summary()
            per_graph.append({"dataset": dataset.name, "variant": name, "graph": k, "cells2": cc.num_cells(2),
                              "betti_1": summary["betti_1"], "parallel_extra": summary["num_parallel_extra"]})
            per_cell.extend({"dataset": dataset.name, "variant": name, "length": int(length)}
                            for length in cc.cell_lengths())
    cells = pd.DataFrame(per_cell, columns=["dataset", "variant", "length"]).astype({"length": "int64"})
    return pd.DataFrame(per_graph), cells
