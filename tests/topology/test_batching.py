"""ComplexData: per-dimension offsets when batching, batch vectors, and subcomplexes that map back."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lifting import graphs
from torch_geometric.data import Batch
from torch_geometric.loader import DataLoader

from toporag_lib.data.graph import TextualGraph
from toporag_lib.topology import lift
from toporag_lib.topology.batching import (
    BATCH_KEYS,
    INDEX_DIMS,
    ComplexData,
    subcomplex,
)

INDEX_GETTERS = {
    "node_edge_index": lambda cc: cc.incidence_index(1),
    "edge_cell_index": lambda cc: cc.incidence_index(2),
    "node_adj_index": lambda cc: cc.upper_adjacency_index(0),
    "edge_adj_index": lambda cc: cc.upper_adjacency_index(1),
}


def featured(graph: TextualGraph, dim: int = 4, **options):
    return lift(graph, torch.randn(graph.num_nodes, dim), torch.randn(graph.num_edges, dim), **options)


def test_from_complex_holds_the_complexs_tensors():
    graph = TextualGraph(["a", "b", "c", "d"], [(0, 1, "x"), (1, 2, "y"), (2, 0, "z"), (2, 2, "loop"), (1, 0, "w")])
    cc = featured(graph)
    data = ComplexData.from_complex(cc)
    for key, getter in INDEX_GETTERS.items():
        assert torch.equal(data[key], getter(cc))
    assert (data.num_nodes, data.num_cells_1, data.num_cells_2) == (4, 5, 2)
    assert data.x0 is cc.z0 and data.x1 is cc.z1 and torch.equal(data.x2, cc.z2)
    assert torch.equal(data.edge_ids, torch.arange(5)) and torch.equal(data.cell_ids, torch.arange(2))


@settings(max_examples=40, deadline=None)
@given(st.lists(graphs(max_nodes=7, max_edges=12), min_size=1, max_size=5), st.sampled_from(["bfs", "dfs", "random"]))
def test_batching_offsets_every_index_by_its_own_dimension(graph_list, tree):
    complexes = [featured(g, tree=tree) for g in graph_list]
    datas = [ComplexData.from_complex(cc) for cc in complexes]
    batch = Batch.from_data_list(datas)
    counts = np.array([[cc.num_cells(d) for d in range(3)] for cc in complexes])
    offsets = np.vstack([np.zeros(3, dtype=int), np.cumsum(counts, axis=0)[:-1]])
    for key, dims in INDEX_DIMS.items():
        expected = torch.cat([INDEX_GETTERS[key](cc) + torch.tensor(offsets[i][list(dims)])[:, None]
                              for i, cc in enumerate(complexes)], dim=1)
        assert torch.equal(batch[key], expected), key
    for dim, key in ((0, "batch"), (1, "batch_1"), (2, "batch_2")):
        assert torch.equal(batch[key], torch.arange(len(complexes)).repeat_interleave(torch.tensor(counts[:, dim])))
    for dim, key in enumerate(("x0", "x1", "x2")):
        assert torch.equal(batch[key], torch.cat([[cc.z0, cc.z1, cc.z2][dim] for cc in complexes]))
    assert batch.num_nodes == counts[:, 0].sum()
    for original, restored in zip(datas, batch.to_data_list()):
        for key in [*INDEX_DIMS, *BATCH_KEYS, "x2", "cell_ids"]:
            assert torch.equal(original[key], restored[key])


def test_dataloader_batches_like_from_data_list():
    rng = np.random.default_rng(0)
    graph_list = []
    for n in (3, 1, 6, 4, 5, 2, 7):
        edges = [(int(a), int(b), "r") for a, b in rng.integers(0, n, size=(2 * n, 2))]
        graph_list.append(TextualGraph([str(i) for i in range(n)], edges))
    datas = [ComplexData.from_complex(featured(g)) for g in graph_list]
    loaded = list(DataLoader(datas, batch_size=3))
    assert len(loaded) == 3
    for i, batch in enumerate(loaded):
        expected = Batch.from_data_list(datas[3 * i:3 * i + 3])
        for key in [*INDEX_DIMS, *BATCH_KEYS, "batch", "x0", "x1", "x2"]:
            assert torch.equal(batch[key], expected[key]), key


@settings(max_examples=60, deadline=None)
@given(graphs(), st.data())
def test_a_subcomplex_is_closed_and_maps_back(graph, data):
    cc = featured(graph)
    cells = data.draw(st.lists(st.integers(0, max(cc.num_cells(2) - 1, 0)), max_size=3)) if cc.num_cells(2) else []
    edges = data.draw(st.lists(st.integers(0, graph.num_edges - 1), max_size=3)) if graph.num_edges else []
    nodes = data.draw(st.lists(st.integers(0, graph.num_nodes - 1), max_size=2))
    sub, (node_ids, edge_ids, cell_ids) = subcomplex(cc, nodes, edges, cells)
    assert set(cell_ids.tolist()) == set(cells) and set(edges) <= set(edge_ids.tolist())
    assert set(nodes) <= set(node_ids.tolist())
    assert not np.any((sub.boundary(1) @ sub.boundary(2)).toarray())
    assert np.array_equal(node_ids[sub.edge_src], cc.edge_src[edge_ids])
    assert np.array_equal(node_ids[sub.edge_dst], cc.edge_dst[edge_ids])
    for c, original in enumerate(cell_ids):
        mine, theirs = sub.cell(c), cc.cell(original)
        assert np.array_equal(node_ids[mine.nodes], theirs.nodes) and np.array_equal(edge_ids[mine.edges], theirs.edges)
        assert np.array_equal(mine.signs, theirs.signs) and edge_ids[mine.generator] == theirs.generator
    torch.testing.assert_close(sub.z2, sub.with_features(sub.z0, sub.z1).z2)
    sub_data = ComplexData.from_complex(cc, nodes, edges, cells)
    assert torch.equal(sub_data.edge_ids, torch.from_numpy(edge_ids))
    assert torch.equal(sub_data.edge_cell_index, sub.incidence_index(2))
