"""Subcomplex retrieval: invariants on many random graphs, parity with PyTorch Geometric, known cases."""

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch_geometric.data import Data
from torch_geometric.llm.utils.backend_utils import retrieval_via_pcst

from toporag_lib.data.graph import TextualGraph
from toporag_lib.retrieval import METHODS, RetrievalConfig, dataset_retrieval, retrieve
from toporag_lib.retrieval.by_method import QueryEmbeddingError
from toporag_lib.retrieval.textualize import textualize_subcomplex
from toporag_lib.topology import LiftConfig, closure, lift

DIM = 8


@st.composite
def featured_complexes(draw, max_nodes=25):
    """A random multigraph (self-loops, parallel edges, several components), lifted, with random features.

    Edge features repeat (texts repeat in real graphs), so G-Retriever's tie handling is exercised.
    """
    n = draw(st.integers(1, max_nodes))
    m = draw(st.integers(0, 3 * n))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=m, max_size=m))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    graph = TextualGraph([f"n{i}" for i in range(n)], [(a, b, f"r{j}") for j, (a, b) in enumerate(pairs)])
    x = torch.tensor(rng.normal(size=(n, DIM)), dtype=torch.float32)
    pool = torch.tensor(rng.normal(size=(max(1, m // 2), DIM)), dtype=torch.float32)
    e = pool[torch.as_tensor(rng.integers(0, len(pool), size=m), dtype=torch.long)] if m else torch.empty(0, DIM)
    q = torch.tensor(rng.normal(size=DIM), dtype=torch.float32)
    return graph, lift(graph, x, e), q


def components(nodes, src, dst) -> int:
    parent = {int(v): int(v) for v in nodes}

    def find(v):
        while parent[v] != v:
            v = parent[v]
        return v

    for a, b in zip(src.tolist(), dst.tolist()):
        parent[find(a)] = find(b)
    return len({find(v) for v in parent})


def assert_closed(cc, sub):
    assert np.all(np.diff(sub.nodes) > 0) and np.all(np.diff(sub.edges) > 0) and np.all(np.diff(sub.cells2) > 0)
    for c in sub.cells2:
        nodes, edges, _, _ = cc.cell(int(c))
        assert set(edges.tolist()) <= set(sub.edges.tolist())
        assert set(nodes.tolist()) <= set(sub.nodes.tolist())
    ends = set(cc.edge_src[sub.edges].tolist()) | set(cc.edge_dst[sub.edges].tolist())
    assert ends <= set(sub.nodes.tolist())


@given(featured_complexes(), st.integers(0, 5), st.integers(0, 6), st.integers(0, 3), st.floats(0.0, 2.0))
def test_toporag_subcomplex_is_closed_and_connected(case, k0, k1, k2, c2):
    graph, cc, q = case
    sub = retrieve(cc, q, RetrievalConfig("toporag", k0=k0, k1=k1, k2=k2, c2=c2))
    assert_closed(cc, sub)
    assert len(sub.nodes) >= 1
    assert components(sub.nodes, cc.edge_src[sub.edges], cc.edge_dst[sub.edges]) == 1
    assert len(sub.cells2) <= k2
    if k2 == 0:
        assert len(sub.cells2) == 0


@given(featured_complexes(), st.integers(0, 5), st.integers(0, 6), st.floats(0.0, 2.0),
       st.sampled_from(["rank", "gretriever"]))
def test_only_2cells_with_a_prized_boundary_are_scored_and_the_prizes_match_scoring_all(case, k0, k1, c2, scheme):
    from toporag_lib.retrieval.prizes import (
        cell_prizes,
        gretriever_edge_prizes,
        rank_prizes,
        unit_cosine,
    )
    from toporag_lib.retrieval.toporag import positive_cell_prizes

    _, cc, q = case
    node_p = rank_prizes(unit_cosine(q, cc.unit_features(0)), k0)
    edge_sim = unit_cosine(q, cc.unit_features(1))
    edge_p = gretriever_edge_prizes(edge_sim, k1, 0.5)[0] if scheme == "gretriever" else rank_prizes(edge_sim, k1)
    every = cell_prizes(node_p, edge_p, cc.cell_ptr, cc.cell_nodes, cc.cell_edges, c2)
    cells, prizes = positive_cell_prizes(cc, node_p, edge_p, c2)
    assert np.array_equal(cells, np.flatnonzero(every > 0)) and np.array_equal(prizes, every[cells])
    for dim, prized in ((0, np.flatnonzero(node_p)), (1, np.flatnonzero(edge_p))):
        members = cc.cell_nodes if dim == 0 else cc.cell_edges
        owner = np.repeat(np.arange(cc.num_cells(2)), cc.cell_lengths())
        assert np.array_equal(cc.cells_containing(dim, prized), np.unique(owner[np.isin(members, prized)]))


@given(featured_complexes())
def test_every_method_returns_a_closed_subcomplex(case):
    _, cc, q = case
    for method in METHODS:
        assert_closed(cc, retrieve(cc, q, RetrievalConfig(method)))


@given(featured_complexes())
def test_retrieval_is_deterministic(case):
    _, cc, q = case
    first, second = retrieve(cc, q, RetrievalConfig(k2=3)), retrieve(cc, q, RetrievalConfig(k2=3))
    assert all(np.array_equal(a, b) for a, b in zip((first.nodes, first.edges, first.cells2),
                                                     (second.nodes, second.edges, second.cells2)))


def pyg_retrieval(cc, q, k0, k1, cost_e):
    n, e = cc.num_nodes, cc.num_cells(1)
    data = Data(x=cc.z0, edge_index=torch.from_numpy(np.stack([cc.edge_src, cc.edge_dst])).long(),
                edge_attr=cc.z1, node_idx=np.arange(n), edge_idx=np.arange(e))
    nodes = pd.DataFrame({"node_id": range(n), "node_attr": [str(i) for i in range(n)]})
    edges = pd.DataFrame({"src": cc.edge_src, "edge_attr": [str(j) for j in range(e)], "dst": cc.edge_dst})
    sub, _ = retrieval_via_pcst(data, q, nodes, edges, topk=k0, topk_e=k1, cost_e=cost_e)
    return np.sort(np.asarray(sub.node_idx)), np.sort(np.asarray(sub.edge_idx))


@given(featured_complexes(max_nodes=40), st.integers(0, 5), st.integers(0, 6), st.sampled_from([0.5, 0.2, 1.5]))
def test_gretriever_matches_pytorch_geometric(case, k0, k1, cost_e):
    _, cc, q = case
    if cc.num_cells(1) == 0:
        return  # PyG skips PCST on edgeless graphs and returns them whole; so do we (tested below)
    ours = retrieve(cc, q, RetrievalConfig("gretriever", k0=k0, k1=k1, cost_e=cost_e))
    nodes, edges = pyg_retrieval(cc, q, k0, k1, cost_e)
    assert ours.nodes.tolist() == nodes.tolist()
    assert ours.edges.tolist() == edges.tolist()


def test_edgeless_graph():
    graph = TextualGraph(["a", "b", "c"], [])
    cc = lift(graph, torch.eye(3), torch.empty(0, 3))
    assert retrieve(cc, torch.tensor([0.0, 1.0, 0.0]), RetrievalConfig("gretriever")).nodes.tolist() == [0, 1, 2]
    assert retrieve(cc, torch.tensor([0.0, 1.0, 0.0]), RetrievalConfig("toporag")).nodes.tolist() == [1]


def square_with_diagonal():
    # 0-1-2-3-0 plus the diagonal 0-2: two triangles
    graph = TextualGraph(["a", "b", "c", "d"], [(0, 1, "ab"), (1, 2, "bc"), (2, 3, "cd"), (3, 0, "da"),
                                                (0, 2, "ac")])
    x = torch.eye(4, 6)
    e = torch.zeros(5, 6)
    e[:, 4] = 1.0
    return graph, lift(graph, x, e, basis="minimum")


def test_a_prized_triangle_is_retrieved_with_its_boundary():
    graph, cc = square_with_diagonal()
    q = torch.tensor([1.0, 0.9, 0.8, 0.0, 0.0, 0.0])  # nodes a, b, c prized; d not
    sub = retrieve(cc, q, RetrievalConfig("toporag", k0=3, k1=0, k2=1, c2=0.5))
    assert len(sub.cells2) == 1
    nodes, edges, _, _ = cc.cell(int(sub.cells2[0]))
    assert sorted(nodes.tolist()) == [0, 1, 2]
    assert sub.nodes.tolist() == [0, 1, 2] and set(edges.tolist()) <= set(sub.edges.tolist())


def test_c2_penalty_can_exclude_all_cells():
    _, cc = square_with_diagonal()
    q = torch.tensor([1.0, 0.9, 0.8, 0.0, 0.0, 0.0])
    assert len(retrieve(cc, q, RetrievalConfig("toporag", k0=3, k1=0, k2=2, c2=10.0)).cells2) == 0


def test_closure_adds_boundaries():
    _, cc = square_with_diagonal()
    nodes, edges, cells = closure(cc, np.array([], dtype=int), np.array([], dtype=int), np.array([0]))
    cell_nodes, cell_edges, _, _ = cc.cell(0)
    assert nodes.tolist() == sorted(cell_nodes.tolist()) and edges.tolist() == sorted(cell_edges.tolist())


def test_textualized_subcomplex_lists_cycles_after_gretrievers_tables():
    graph, cc = square_with_diagonal()
    sub = retrieve(cc, torch.tensor([1.0, 0.9, 0.8, 0.0, 0.0, 0.0]),
                   RetrievalConfig("toporag", k0=3, k1=0, k2=1, c2=0.5))
    text = textualize_subcomplex(graph, cc, sub)
    tables = text.split("\n\n")
    assert tables[0].startswith("node_id,node_attr\n0,a\n1,b\n2,c")
    assert tables[1].startswith("src,edge_attr,dst\n")
    assert tables[2].startswith("cell_id,cycle\n")
    cycle = tables[2].splitlines()[1].split(",", 1)[1]
    assert cycle.count("->") + cycle.count("<-") == 3 and cycle.split()[0] == cycle.split()[-1]  # closed, 3 edges
    no_cells = retrieve(cc, torch.tensor([1.0, 0.9, 0.8, 0.0, 0.0, 0.0]), RetrievalConfig("gretriever"))
    assert "cell_id" not in textualize_subcomplex(graph, cc, no_cells)


def test_shortest_path_joins_the_seeds():
    graph = TextualGraph(list("abcde"), [(0, 1, "r"), (1, 2, "r"), (2, 3, "r"), (3, 4, "r")])
    cc = lift(graph, torch.eye(5), torch.zeros(4, 5))
    sub = retrieve(cc, torch.tensor([1.0, 0.0, 0.0, 0.0, 0.9]), RetrievalConfig("shortest_path", k0=2))
    assert sub.nodes.tolist() == [0, 1, 2, 3, 4] and sub.edges.tolist() == [0, 1, 2, 3]


def test_khop_takes_the_neighbourhood():
    graph = TextualGraph(list("abcde"), [(0, 1, "r"), (1, 2, "r"), (2, 3, "r"), (3, 4, "r")])
    cc = lift(graph, torch.eye(5), torch.zeros(4, 5))
    sub = retrieve(cc, torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0]), RetrievalConfig("khop", k0=1, hops=2))
    assert sub.nodes.tolist() == [0, 1, 2] and sub.edges.tolist() == [0, 1]


def test_bad_input_is_reported():
    graph = TextualGraph(["a", "b"], [(0, 1, "r")])
    with pytest.raises(ValueError, match="no features"):
        retrieve(lift(graph), torch.zeros(3), RetrievalConfig())
    with pytest.raises(ValueError, match="unknown retrieval method 'magic'"):
        retrieve(lift(graph, torch.eye(2), torch.ones(1, 2)), torch.zeros(2), RetrievalConfig("magic"))
    with pytest.raises(TypeError, match=r"retrieve takes a RetrievalConfig, not str 'toporag'"):
        retrieve(lift(graph, torch.eye(2), torch.ones(1, 2)), torch.zeros(2), "toporag")


@pytest.mark.parametrize("params, message", [
    ({"k0": -1}, r"k0=-1: expected an int >= 0"),
    ({"k2": 1.5}, r"k2=1.5: expected an int >= 0"),
    ({"c2": float("nan")}, r"c2=nan: expected a finite number >= 0"),
    ({"cost_e": float("inf")}, r"cost_e=inf: expected a finite number >= 0"),
    ({"k_1": 3}, r"unexpected keyword argument 'k_1'"),
])
def test_retrieval_arguments_are_checked(params, message):
    _, cc = square_with_diagonal()
    with pytest.raises((ValueError, TypeError), match=message):
        retrieve(cc, torch.ones(6), RetrievalConfig("toporag", **params))


@pytest.mark.parametrize("method", METHODS)
def test_a_query_of_the_wrong_size_or_not_finite_is_refused_by_every_method(method):
    _, cc = square_with_diagonal()
    with pytest.raises(ValueError, match=r"query embedding of shape \(5,\): expected \(6,\)"):
        retrieve(cc, torch.ones(5), RetrievalConfig(method))
    with pytest.raises(ValueError, match="query embedding has non-finite values"):
        retrieve(cc, torch.tensor([1.0, float("nan"), 0, 0, 0, 0]), RetrievalConfig(method))


@pytest.mark.parametrize("method", METHODS)
def test_an_all_zero_query_is_refused_by_every_method_not_ranked_by_tie_breaks(method):
    _, cc = square_with_diagonal()
    with pytest.raises(QueryEmbeddingError, match="query embedding is all zeros: its cosine with every cell is "
                                                  "undefined"):
        retrieve(cc, torch.zeros(6), RetrievalConfig(method))
    with pytest.raises(QueryEmbeddingError, match="all zeros"):
        retrieve(cc, np.zeros((1, 6), dtype=np.float32), RetrievalConfig(method))
    tiny = torch.tensor([1e-30, 0, 0, 0, 0, 0])  # not zero: ranks as its direction does
    assert retrieve(cc, tiny, RetrievalConfig(method)).nodes.tolist() == \
        retrieve(cc, torch.tensor([1.0, 0, 0, 0, 0, 0]), RetrievalConfig(method)).nodes.tolist()


def test_non_finite_cell_features_are_refused_when_attached():
    graph, _ = square_with_diagonal()
    x = torch.eye(4, 6)
    x[2, 1] = float("inf")
    with pytest.raises(ValueError, match="node_emb has non-finite values .* in 1 rows, e.g. row 2"):
        lift(graph, x, torch.zeros(5, 6))


def test_dataset_defaults_follow_the_paper():
    assert dataset_retrieval("webqsp").k0 == 3 and dataset_retrieval("webqsp").k1 == 3
    assert dataset_retrieval("scenegraphs").k1 == 5
    assert dataset_retrieval("explagraphs").reads() == {"method": "whole_graph", "k2": 2}
    assert RetrievalConfig(method="kaping").reads() == {"method": "kaping", "k1": 5}


def test_kaping_takes_the_most_similar_triples():
    graph = TextualGraph(list("abcd"), [(0, 1, "x"), (1, 2, "y"), (2, 3, "z")])
    e = torch.eye(3, 4)
    cc = lift(graph, torch.ones(4, 4), e)
    sub = retrieve(cc, torch.tensor([0.0, 1.0, 0.9, 0.0]), RetrievalConfig("kaping", k1=2))
    assert sub.edges.tolist() == [1, 2] and sub.nodes.tolist() == [1, 2, 3] and len(sub.cells2) == 0


def test_prepare_with_cached_lifts_matches_plain_lifting(tiny_encoder_path, isolated_cache):
    from toporag_lib.data import load_dataset
    from toporag_lib.embed import TextEncoder
    from toporag_lib.training.preprocess import prepare

    dataset = load_dataset("synthetic_scenes", num_images=3, questions_per_image=2, seed=3)
    encoder = TextEncoder(tiny_encoder_path, progress=False)
    minimum = LiftConfig(basis="minimum")
    plain = prepare(dataset, encoder, progress=False, lift=minimum)
    cached = prepare(dataset, encoder, progress=False, cache_lifts=True, lift=minimum)
    again = prepare(dataset, encoder, progress=False, cache_lifts=True, lift=minimum)
    assert len(list((isolated_cache / "cache" / "lifting").glob("*.npz"))) == len(plain.complexes) == 3
    for a, b in zip(plain.complexes, again.complexes):
        assert np.array_equal(a.cell_edges, b.cell_edges) and torch.equal(a.z2, b.z2)
    assert plain.graph_of == cached.graph_of == [0, 0, 1, 1, 2, 2]


def test_whole_graph_without_2cells_really_has_none():
    graph = TextualGraph(["a", "b", "c"], [(0, 1, "r"), (1, 2, "r"), (2, 0, "r")])
    cc = lift(graph, torch.randn(3, 8), torch.randn(3, 8))
    q = torch.randn(8)
    assert retrieve(cc, q, RetrievalConfig("whole_graph")).num_cells(2) == 1  # the triangle
    assert retrieve(cc, q, RetrievalConfig("whole_graph", k2=0)).num_cells(2) == 0  # w/o CRL on ExplaGraphs
    assert retrieve(cc, q, RetrievalConfig("whole_graph", k2=0)).num_cells(1) == 3


def test_toporag_with_gretriever_prizes_and_no_2cells_is_gretriever():
    rng = np.random.default_rng(3)
    for trial in range(25):
        n = int(rng.integers(3, 30))
        edges = [(int(a), int(b), f"r{int(rng.integers(3))}") for a, b in rng.integers(0, n, size=(2 * n, 2))]
        graph = TextualGraph([f"v{i}" for i in range(n)], edges)
        cc = lift(graph, torch.randn(n, 8), torch.randn(len(edges), 8))
        q = torch.randn(8)
        ours = retrieve(cc, q, RetrievalConfig("toporag", k2=0, prizes="gretriever"))
        theirs = retrieve(cc, q, RetrievalConfig("gretriever"))
        assert np.array_equal(ours.nodes, theirs.nodes) and np.array_equal(ours.edges, theirs.edges), trial


def test_a_2cell_that_pays_for_its_boundary_is_a_leaf_not_a_free_hub():
    from toporag_lib.retrieval import pcst

    edge_index = np.array([[0, 1, 2], [1, 2, 0]])
    prizes, edge_prizes = np.array([3.0, 0.0, 2.0], np.float32), np.zeros(3, np.float32)
    hub = pcst.build_instance(3, edge_index, prizes, edge_prizes, 0.5, cell_ids=np.array([0]),
                              cell_prizes=np.array([4.0]), cell_vertex_ptr=np.array([0, 3]),
                              cell_vertices=np.array([0, 1, 2]))
    leaf = pcst.build_instance(3, edge_index, prizes, edge_prizes, 0.5, cell_ids=np.array([0]),
                               cell_prizes=np.array([4.0]), cell_vertex_ptr=np.array([0, 1]),
                               cell_vertices=np.array([0]), cell_spoke_costs=np.array([1.5]))
    assert hub.costs[-3:].tolist() == [0.0, 0.0, 0.0] and len(hub.edges) == 6  # tied to every vertex, free
    assert leaf.costs[-1] == 1.5 and leaf.edges[-1].tolist() == [3, 0] and len(leaf.edges) == 4  # one paid tie
    graph = TextualGraph([f"v{i}" for i in range(6)], [(i, (i + 1) % 6, "r") for i in range(6)])
    cc = lift(graph, torch.eye(8)[:6], torch.eye(8)[2:8])
    sub = retrieve(cc, torch.eye(8)[0] + torch.eye(8)[3],
                   RetrievalConfig("toporag", k0=2, cells="all", cell_cost="boundary"))
    assert set(sub.edges.tolist()) >= {int(e) for c in sub.cells2.tolist() for e in cc.cell(c).edges}


@given(st.lists(st.sampled_from([0.5, -0.25, 0.0, 1.0, 0.125, float("inf"), -float("inf")]), max_size=40),
       st.integers(0, 45))
def test_top_k_is_exactly_the_stable_full_sort(values, k):
    from toporag_lib.retrieval.prizes import top_k

    scores = np.array(values, dtype=np.float32)  # few distinct values: many ties at the threshold
    expected = np.argsort(-scores, kind="stable")[:min(k, len(scores))]
    assert np.array_equal(top_k(scores, k), expected)


def test_top_k_on_random_scores_and_nan():
    from toporag_lib.retrieval.prizes import top_k

    rng = np.random.default_rng(0)
    for _ in range(200):
        scores = rng.integers(0, 20, size=int(rng.integers(1, 300))).astype(np.float32) / 7
        k = int(rng.integers(1, 20))
        assert np.array_equal(top_k(scores, k), np.argsort(-scores, kind="stable")[:k])
    with_nan = np.array([0.1, np.nan, 0.3, 0.2], dtype=np.float32)
    assert np.array_equal(top_k(with_nan, 2), np.argsort(-with_nan, kind="stable")[:2])


@pytest.mark.parametrize("threads", [1, 2])
def test_equal_rows_get_equal_similarities_wherever_they_sit(threads):
    """Equal texts must tie exactly (G-Retriever's edge prizes share a tied value); a matrix-vector product does
    not give that (sgemv rounds rows by position: 39 equal rows of 384 floats come out with several values)."""
    from toporag_lib.retrieval.prizes import unit_cosine

    generator = torch.Generator().manual_seed(0)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for rows, dim in ((39, 384), (19, 8), (257, 1024)):
            unit = torch.nn.functional.normalize(torch.randn(dim, generator=generator), dim=0).expand(rows, dim)
            sims = unit_cosine(torch.randn(dim, generator=generator), unit.contiguous())
            assert len(set(sims.tolist())) == 1, (rows, dim)
    finally:
        torch.set_num_threads(before)
