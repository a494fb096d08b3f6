"""Lifting statistics per dataset: one row per graph and variant, one per 2-cell, as the per-graph lift gives."""

from toporag_lib.data import load_dataset
from toporag_lib.study.dataset_stats import lifting_stats
from toporag_lib.topology import lift


def test_lifting_stats_match_the_per_graph_lift():
    dataset = load_dataset("explagraphs")
    variants = {"bfs": {}, "dfs, no digons": {"tree": "dfs", "parallel": "ignore"}}
    per_graph, cells = lifting_stats(dataset, variants, max_graphs=40)
    graphs = [dataset[i].graph for i in dataset.distinct_graphs()[0][:40]]
    for name, options in variants.items():
        complexes = [lift(g, **options) for g in graphs]
        rows = per_graph[per_graph.variant == name]
        assert rows.cells2.tolist() == [cc.num_cells(2) for cc in complexes]
        assert rows.betti_1.tolist() == [cc.summary()["betti_1"] for cc in complexes]
        assert cells[cells.variant == name].length.tolist() == [int(n) for cc in complexes for n in cc.cell_lengths()]
