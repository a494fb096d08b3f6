"""Cellular lifting: counting rule, closed boundaries, cycle spaces, trees, features, awkward cases, cache."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toporag_lib.data.graph import TextualGraph
from toporag_lib.topology import TREES, CellComplex, lift, lifting_cache

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUNDAMENTAL = [{"tree": tree} for tree in TREES]
ALL_BASES = FUNDAMENTAL + [{"basis": "minimum"}]


@st.composite
def graphs(draw, max_nodes: int = 10, max_edges: int = 20) -> TextualGraph:
    """Random directed multigraphs: self-loops, parallel edges both ways, isolated nodes, several components."""
    n = draw(st.integers(1, max_nodes))
    node, m = st.integers(0, n - 1), draw(st.integers(0, max_edges))
    pairs = draw(st.lists(st.tuples(node, node), min_size=m, max_size=m))
    if pairs:  # repeat some edges, in either direction, to make parallel edges common
        again = draw(st.lists(st.tuples(st.sampled_from(pairs), st.booleans()), max_size=4))
        pairs += [(b, a) if flip else (a, b) for (a, b), flip in again]
        pairs = draw(st.permutations(pairs))
    return TextualGraph([f"node {i}" for i in range(n)], [(a, b, f"rel {j}") for j, (a, b) in enumerate(pairs)])


def extra_parallel(graph: TextualGraph) -> int:
    non_loops = [(s, d) for s, d, _ in graph.edges if s != d]
    return len(non_loops) - len({frozenset(p) for p in non_loops})


def dense(matrix: sp.sparray) -> np.ndarray:
    return matrix.toarray().astype(np.int64)


def rank(*matrices: np.ndarray) -> int:
    stacked = np.hstack(matrices)
    return int(np.linalg.matrix_rank(stacked)) if stacked.size else 0


def tree_graph(graph: TextualGraph, cc: CellComplex) -> nx.Graph:
    forest = nx.Graph()
    forest.add_nodes_from(range(graph.num_nodes))
    forest.add_edges_from(graph.edges[j][:2] for j in np.flatnonzero(cc.tree_mask))
    return forest


# --- counting rule and boundaries -------------------------------------------------------------------------

@SETTINGS
@given(graphs(), st.sampled_from(ALL_BASES), st.sampled_from(["digon", "ignore"]))
def test_number_of_2cells_follows_the_rule(graph, options, parallel):
    cc = lift(graph, parallel=parallel, **options)
    digons = extra_parallel(graph) if parallel == "digon" else 0
    assert cc.num_cells(2) == graph.num_independent_cycles() + digons
    assert (cc.num_cells(0), cc.num_cells(1)) == (graph.num_nodes, graph.num_edges)
    assert cc.summary()["betti_1"] == graph.num_independent_cycles()


@SETTINGS
@given(graphs(), st.sampled_from(ALL_BASES))
def test_boundary_of_boundary_is_zero(graph, options):
    cc = lift(graph, **options)
    b1, b2 = cc.boundary(1), cc.boundary(2)
    assert b1.shape == (graph.num_nodes, graph.num_edges) and b2.shape == (graph.num_edges, cc.num_cells(2))
    assert np.issubdtype(b1.dtype, np.integer) and np.issubdtype(b2.dtype, np.integer)
    assert not np.any(dense(b1 @ b2))


@SETTINGS
@given(graphs(), st.sampled_from(ALL_BASES))
def test_every_2cell_is_one_simple_closed_walk(graph, options):
    cc = lift(graph, **options)
    b2 = dense(cc.boundary(2))
    for c in range(cc.num_cells(2)):
        nodes, edges, signs, generator = cc.cell(c)
        length = len(nodes)
        assert length == len(edges) == len(signs) == cc.cell_lengths()[c] >= 2
        assert edges[0] == generator and signs[0] == 1
        assert len(set(nodes.tolist())) == length and len(set(edges.tolist())) == length
        degree = np.zeros(graph.num_nodes, dtype=int)
        for i in range(length):
            src, dst, _ = graph.edges[edges[i]]
            here, there = nodes[i], nodes[(i + 1) % length]
            assert {src, dst} == {here, there} and src != dst
            assert signs[i] == (1 if (src, dst) == (here, there) else -1)
            degree[[src, dst]] += 1
        assert set(np.flatnonzero(degree).tolist()) == set(nodes.tolist()) and set(degree[nodes]) == {2}
        expected = np.zeros(graph.num_edges, dtype=np.int64)
        expected[edges] = signs
        assert np.array_equal(b2[:, c], expected)


@pytest.mark.parametrize("tree", TREES)
def test_a_larger_random_multigraph(tree):
    rng = np.random.default_rng(5)
    edges = [(int(rng.integers(i)), i, "tree") for i in range(1, 300)]
    edges += [(int(a), int(b), "extra") for a, b in rng.integers(0, 320, size=(700, 2))]
    graph = TextualGraph([str(i) for i in range(320)], edges)
    cc = lift(graph, tree=tree)
    assert cc.num_cells(2) == graph.num_independent_cycles() + extra_parallel(graph)
    assert not np.any(dense(cc.boundary(1) @ cc.boundary(2)))
    src, dst = cc.edge_src[cc.cell_edges], cc.edge_dst[cc.cell_edges]
    following = np.roll(cc.cell_nodes, -1)
    following[cc.cell_ptr[1:] - 1] = cc.cell_nodes[cc.cell_ptr[:-1]]  # each walk closes on its first node
    forward = (src == cc.cell_nodes) & (dst == following)
    backward = (dst == cc.cell_nodes) & (src == following)
    assert np.all(forward | backward) and np.array_equal(cc.cell_signs == 1, forward)


# --- cycle spaces ----------------------------------------------------------------------------------------

@SETTINGS
@given(graphs(), st.integers(0, 3))
def test_all_bases_span_the_same_cycle_space_and_are_independent(graph, seed):
    bases = [dense(lift(graph, seed=seed, **options).boundary(2)) for options in ALL_BASES]
    expected = graph.num_independent_cycles() + extra_parallel(graph)
    for b2 in bases:
        assert rank(b2) == b2.shape[1] == expected
        assert rank(bases[0], b2) == expected


@SETTINGS
@given(graphs())
def test_minimum_basis_has_the_minimum_total_length(graph):
    simple = nx.Graph()
    simple.add_nodes_from(range(graph.num_nodes))
    simple.add_edges_from((s, d) for s, d, _ in graph.edges if s != d)
    expected = sum(len(cycle) for cycle in nx.minimum_cycle_basis(simple))
    lengths = lift(graph, basis="minimum", parallel="ignore").cell_lengths()
    assert lengths.sum() == expected
    assert lengths.sum() <= lift(graph, parallel="ignore").cell_lengths().sum()


def test_minimum_basis_prefers_triangles_and_squares():
    # A 3x3 grid with one diagonal: its minimum basis is 1 square + 2 triangles + 3 squares.
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))
    edges = [(a, b, "r") for a, b in grid.edges] + [(0, 4, "diag")]
    graph = TextualGraph([str(i) for i in range(9)], edges)
    assert sorted(lift(graph, basis="minimum").cell_lengths().tolist()) == [3, 3, 4, 4, 4]


# --- spanning trees --------------------------------------------------------------------------------------

@SETTINGS
@given(graphs(), st.sampled_from(TREES), st.integers(0, 5))
def test_tree_edges_form_a_spanning_forest(graph, tree, seed):
    cc = lift(graph, tree=tree, seed=seed)
    forest = tree_graph(graph, cc)
    assert cc.tree_mask.sum() == graph.num_nodes - graph.num_components()
    assert nx.is_forest(forest) and nx.number_connected_components(forest) == graph.num_components()
    tree_edges = [graph.edges[j] for j in np.flatnonzero(cc.tree_mask)]
    assert all(s != d for s, d, _ in tree_edges)
    first = {}
    for j, (s, d, _) in enumerate(graph.edges):
        first.setdefault(frozenset((s, d)), j)
    assert all(first[frozenset(graph.edges[j][:2])] == j for j in np.flatnonzero(cc.tree_mask))


@SETTINGS
@given(graphs())
def test_bfs_tree_depths_are_distances_from_each_components_smallest_node(graph):
    cc = lift(graph, tree="bfs")
    forest, full = tree_graph(graph, cc), nx.Graph(tree_graph(graph, cc))
    full.add_edges_from((s, d) for s, d, _ in graph.edges if s != d)
    for component in nx.connected_components(full):
        root = min(component)
        assert nx.single_source_shortest_path_length(forest, root) == nx.single_source_shortest_path_length(full, root)


@SETTINGS
@given(graphs())
def test_dfs_non_tree_edges_join_an_ancestor_and_a_descendant(graph):
    cc = lift(graph, tree="dfs")
    forest = tree_graph(graph, cc)
    for c in np.flatnonzero(cc.cell_lengths() > 2):
        s, t, _ = graph.edges[cc.cell_generator[c]]
        root = min(nx.node_connected_component(forest, s))
        path = nx.shortest_path(forest, root, s)
        other = nx.shortest_path(forest, root, t)
        assert t in path or s in other


def test_random_tree_is_reproducible_and_depends_on_the_seed():
    complete = [(a, b, "r") for a in range(6) for b in range(a + 1, 6)]
    graph = TextualGraph([str(i) for i in range(6)], complete)
    first, again = lift(graph, tree="random", seed=7), lift(graph, tree="random", seed=7)
    for name in ("tree_mask", "cell_ptr", "cell_nodes", "cell_edges", "cell_signs", "cell_generator"):
        assert np.array_equal(getattr(first, name), getattr(again, name))
    trees = {lift(graph, tree="random", seed=seed).tree_mask.tobytes() for seed in range(6)}
    assert len(trees) > 1


# --- features and index tensors --------------------------------------------------------------------------

@SETTINGS
@given(graphs(), st.sampled_from(ALL_BASES))
def test_2cell_features_are_the_mean_of_their_boundary(graph, options):
    node_emb = torch.randn(graph.num_nodes, 5, dtype=torch.float64)
    edge_emb = torch.randn(graph.num_edges, 5, dtype=torch.float64)
    cc = lift(graph, node_emb, edge_emb, **options)
    assert cc.z0 is node_emb and cc.z1 is edge_emb and cc.z2.shape == (cc.num_cells(2), 5)
    for c in range(cc.num_cells(2)):
        nodes, edges, _, _ = cc.cell(c)
        expected = torch.cat([node_emb[nodes.tolist()], edge_emb[edges.tolist()]]).mean(0)
        torch.testing.assert_close(cc.z2[c], expected)


def columns(index: torch.Tensor) -> list[tuple[int, ...]]:
    return sorted(map(tuple, index.t().tolist()))


@SETTINGS
@given(graphs(), st.sampled_from(ALL_BASES))
def test_index_tensors_agree_with_the_boundary_matrices(graph, options):
    cc = lift(graph, **options)
    b1, b2 = cc.boundary(1).tocoo(), cc.boundary(2).tocoo()
    loops = [(s, j) for j, (s, d, _) in enumerate(graph.edges) if s == d]
    assert columns(cc.incidence_index(1)) == sorted(list(zip(b1.row.tolist(), b1.col.tolist())) + loops)
    assert columns(cc.incidence_index(2)) == sorted(zip(b2.row.tolist(), b2.col.tolist()))
    node_pairs = [(s, d, j) for j, (s, d, _) in enumerate(graph.edges) if s != d]
    assert columns(cc.upper_adjacency_index(0)) == sorted(node_pairs + [(d, s, j) for s, d, j in node_pairs])
    edge_pairs = [(a, b, c) for c in range(cc.num_cells(2)) for a in cc.cell(c).edges.tolist()
                  for b in cc.cell(c).edges.tolist() if a != b]
    assert columns(cc.upper_adjacency_index(1)) == sorted(edge_pairs)
    for dim in (1, 2):
        assert cc.incidence_index(dim).dtype == torch.long
    for dim in (0, 1):
        assert cc.upper_adjacency_index(dim).dtype == torch.long


# --- awkward cases, decided on purpose -------------------------------------------------------------------

def test_self_loop_has_an_empty_boundary_and_bounds_nothing():
    graph = TextualGraph(["a", "b"], [(0, 0, "self"), (0, 1, "r")])
    cc = lift(graph)
    assert dense(cc.boundary(1))[:, 0].tolist() == [0, 0]
    assert cc.num_cells(2) == 0 and not cc.tree_mask[0] and cc.tree_mask[1]
    assert columns(cc.incidence_index(1)) == [(0, 0), (0, 1), (1, 1)]
    assert columns(cc.upper_adjacency_index(0)) == [(0, 1, 1), (1, 0, 1)]


def test_parallel_edges_in_either_direction_make_digons():
    graph = TextualGraph(["a", "b"], [(0, 1, "first"), (1, 0, "back"), (0, 1, "again")])
    cc = lift(graph)
    assert cc.tree_mask.tolist() == [True, False, False]
    assert cc.cell_generator.tolist() == [1, 2] and cc.cell_lengths().tolist() == [2, 2]
    assert cc.cell(0).nodes.tolist() == [1, 0] and cc.cell(0).edges.tolist() == [1, 0]
    assert cc.cell(0).signs.tolist() == [1, 1]
    assert cc.cell(1).nodes.tolist() == [0, 1] and cc.cell(1).edges.tolist() == [2, 0]
    assert cc.cell(1).signs.tolist() == [1, -1]
    assert lift(graph, parallel="ignore").num_cells(2) == 0


def test_a_non_tree_first_parallel_edge_still_bounds_the_digon():
    # Edge 2 (the first 1-2 edge) closes the triangle; edge 3 runs parallel to it.
    graph = TextualGraph(["a", "b", "c"], [(0, 1, "x"), (0, 2, "y"), (1, 2, "z"), (2, 1, "z'")])
    cc = lift(graph)
    assert not cc.tree_mask[2] and cc.cell_generator.tolist() == [2, 3]
    assert cc.cell(1).edges.tolist() == [3, 2] and cc.cell_lengths().tolist() == [3, 2]


def test_summary_counts_the_awkward_parts():
    graph = TextualGraph(["a", "b", "c", "d"], [(0, 1, "x"), (1, 0, "y"), (1, 2, "z"), (2, 0, "w"), (3, 3, "l")])
    summary = lift(graph).summary()
    assert {k: summary[k] for k in ("num_2cells", "num_components", "betti_1", "num_self_loops",
                                     "num_parallel_extra", "num_digons", "cell_length_max")} == {
        "num_2cells": 2, "num_components": 2, "betti_1": 1, "num_self_loops": 1, "num_parallel_extra": 1,
        "num_digons": 1, "cell_length_max": 3}
    assert summary["tree"] == "bfs" and summary["parallel"] == "digon"


def test_isolated_nodes_have_no_cofaces():
    graph = TextualGraph(["a", "b", "c", "alone"], [(0, 1, "r"), (1, 2, "r"), (2, 0, "r")])
    cc = lift(graph)
    assert 3 not in cc.incidence_index(1)[0].tolist() and cc.num_components() == 2
    assert cc.num_cells(2) == 1


def test_graph_without_edges_has_only_0cells():
    graph = TextualGraph(["a", "b"], [])
    cc = lift(graph, torch.randn(2, 3), torch.zeros(0, 3))
    assert [cc.num_cells(d) for d in range(3)] == [2, 0, 0]
    assert cc.boundary(1).shape == (2, 0) and cc.boundary(2).shape == (0, 0)
    assert cc.z2.shape == (0, 3) and cc.upper_adjacency_index(1).shape == (3, 0)


def test_graph_without_nodes_is_refused():
    with pytest.raises(ValueError, match="no nodes"):
        lift(TextualGraph([], []))


@pytest.mark.parametrize("options", [{"tree": "prim"}, {"basis": "short"}, {"parallel": "merge"},
                                     {"max_cycle_len": -1}])
def test_unknown_options_are_refused(options):
    with pytest.raises(ValueError):
        lift(TextualGraph(["a"], []), **options)


def test_features_must_come_in_pairs_with_matching_shapes():
    graph = TextualGraph(["a", "b"], [(0, 1, "r")])
    with pytest.raises(ValueError, match="both"):
        lift(graph, node_emb=torch.zeros(2, 4))
    with pytest.raises(ValueError, match="rows"):
        lift(graph, torch.zeros(3, 4), torch.zeros(1, 4))
    with pytest.raises(ValueError, match="feature size"):
        lift(graph, torch.zeros(2, 4), torch.zeros(1, 5))


# --- max_cycle_len ---------------------------------------------------------------------------------------

@SETTINGS
@given(graphs(), st.sampled_from(ALL_BASES), st.integers(0, 6))
def test_max_cycle_len_drops_exactly_the_longer_cells(graph, options, cap):
    full, capped = lift(graph, **options), lift(graph, max_cycle_len=cap, **options)
    assert np.all(capped.cell_lengths() <= cap)
    if options.get("basis") != "minimum":  # same tree: the capped cells are the short cells of the full lift
        keep = np.flatnonzero(full.cell_lengths() <= cap)
        assert capped.cell_generator.tolist() == full.cell_generator[keep].tolist()
        assert np.array_equal(dense(capped.boundary(2)), dense(full.boundary(2))[:, keep])


def test_max_cycle_len_caps_long_dfs_cycles():
    ring = [(i, (i + 1) % 12, "r") for i in range(12)] + [(0, 6, "chord"), (0, 1, "parallel")]
    graph = TextualGraph([str(i) for i in range(12)], ring)
    assert lift(graph, tree="dfs").cell_lengths().tolist() == [12, 7, 2]
    assert lift(graph, tree="dfs", max_cycle_len=7).cell_lengths().tolist() == [7, 2]
    assert lift(graph, tree="dfs", max_cycle_len=2).cell_lengths().tolist() == [2]
    assert lift(graph, tree="dfs", max_cycle_len=0).num_cells(2) == 0


# --- on-disk cache ---------------------------------------------------------------------------------------

TRIANGLE = TextualGraph(["a", "b", "c"], [(0, 1, "x"), (1, 2, "y"), (2, 0, "z"), (0, 1, "x2")])


def same_topology(a: CellComplex, b: CellComplex) -> bool:
    names = ("edge_src", "edge_dst", "cell_ptr", "cell_nodes", "cell_edges", "cell_signs", "cell_generator")
    same = all(np.array_equal(getattr(a, n), getattr(b, n)) for n in names)
    masks = (a.tree_mask is None and b.tree_mask is None) or np.array_equal(a.tree_mask, b.tree_mask)
    return same and masks and a.num_nodes == b.num_nodes and a.options == b.options


@pytest.mark.parametrize("options", [{}, {"tree": "random", "seed": 3}, {"basis": "minimum", "max_cycle_len": 3}])
def test_cache_round_trip_reads_without_recomputing(tmp_path, monkeypatch, options):
    first = lifting_cache.lift_cached(TRIANGLE, tmp_path, **options)
    assert same_topology(first, lift(TRIANGLE, **options))
    monkeypatch.setattr(lifting_cache, "lift", lambda *a, **k: pytest.fail("recomputed a cached complex"))
    again = lifting_cache.lift_cached(TRIANGLE, tmp_path, **options)
    assert same_topology(first, again)
    assert [p.suffix for p in tmp_path.iterdir()] == [".npz"]


def test_cache_attaches_features_after_loading(tmp_path):
    node_emb, edge_emb = torch.randn(3, 4), torch.randn(4, 4)
    lifting_cache.lift_cached(TRIANGLE, tmp_path)
    cc = lifting_cache.lift_cached(TRIANGLE, tmp_path, node_emb, edge_emb)
    torch.testing.assert_close(cc.z2, lift(TRIANGLE, node_emb, edge_emb).z2)


def test_cache_key_covers_graph_options_defaults_and_format(monkeypatch):
    key = lifting_cache.cache_key(TRIANGLE)
    assert key == lifting_cache.cache_key(TRIANGLE, tree="bfs", parallel="digon")
    assert key != lifting_cache.cache_key(TRIANGLE, tree="dfs")
    assert key != lifting_cache.cache_key(TextualGraph(["a", "b", "C"], TRIANGLE.edges))
    assert key != lifting_cache.cache_key(TextualGraph(TRIANGLE.nodes, TRIANGLE.edges[:3]))
    monkeypatch.setattr(lifting_cache, "FORMAT_VERSION", lifting_cache.FORMAT_VERSION + 1)
    assert key != lifting_cache.cache_key(TRIANGLE)
    with pytest.raises(TypeError, match="unknown"):
        lifting_cache.cache_key(TRIANGLE, trees="bfs")


@pytest.mark.parametrize("damage", [lambda b: b[: len(b) // 2], lambda b: b"", lambda b: b[:40] + b"\0" * 60 + b[100:]])
def test_a_corrupt_cache_file_is_recomputed(tmp_path, damage):
    path = lifting_cache.cache_path(TRIANGLE, tmp_path)
    expected = lifting_cache.lift_cached(TRIANGLE, tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.warns(UserWarning, match="recomputing"):
        recovered = lifting_cache.lift_cached(TRIANGLE, tmp_path)
    assert same_topology(recovered, expected)
    assert same_topology(lifting_cache.lift_cached(TRIANGLE, tmp_path), expected)  # rewritten: no warning now


def test_a_failed_cache_write_leaves_no_file(tmp_path, monkeypatch):
    def broken_replace(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(lifting_cache.atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        lifting_cache.lift_cached(TRIANGLE, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_default_cache_folder_follows_toporag_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPORAG_CACHE", str(tmp_path))
    lifting_cache.lift_cached(TRIANGLE)
    assert lifting_cache.cache_path(TRIANGLE).parent == tmp_path / "lifting" and lifting_cache.cache_path(TRIANGLE).exists()


def test_a_cache_file_of_another_graph_is_recomputed(tmp_path):
    other = TextualGraph(["a", "b", "c"], [(0, 1, "x"), (1, 2, "y")])
    lifting_cache.lift_cached(other, tmp_path)
    lifting_cache.cache_path(other, tmp_path).rename(lifting_cache.cache_path(TRIANGLE, tmp_path))
    with pytest.warns(UserWarning, match="recomputing"):
        assert lifting_cache.lift_cached(TRIANGLE, tmp_path).num_cells(2) == 2


# --- outside oracle: TopoNetX -----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(graphs())
def test_agrees_with_toponetx(graph):
    from toponetx import transform
    simple = nx.Graph()
    simple.add_nodes_from(range(graph.num_nodes))
    simple.add_edges_from((s, d) for s, d, _ in graph.edges if s != d)
    theirs = transform.homology_cycle_cell_complex(simple)
    ours = lift(graph, parallel="ignore")
    assert ours.num_cells(2) == len(nx.cycle_basis(simple))
    if ours.num_cells(2) == 0:
        return
    rows, _, b2 = theirs.incidence_matrix(2, index=True)
    assert b2.shape[1] == ours.num_cells(2)
    assert not np.any((theirs.incidence_matrix(1) @ b2).toarray())
    first = {}
    for j, (s, d, _) in enumerate(graph.edges):
        first.setdefault(frozenset((s, d)), (j, s))
    mapped = np.zeros((graph.num_edges, b2.shape[1]))
    for (u, v), row in rows.items():
        j, s = first[frozenset((u, v))]
        mapped[j] = b2.toarray()[row] * (1 if s == u else -1)
    ours_b2 = dense(ours.boundary(2))
    assert rank(mapped) == rank(ours_b2) == rank(mapped, ours_b2) == ours.num_cells(2)


def test_temporary_files_of_killed_writes_are_cleared(tmp_path):
    import os
    import time

    tmp_path.mkdir(exist_ok=True)
    old, fresh = tmp_path / ".abc.npz.tmp", tmp_path / ".def.npz.tmp"
    for leftover in (old, fresh):
        leftover.write_bytes(b"half a file")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    lifting_cache.lift_cached(TRIANGLE, tmp_path)
    assert not old.exists() and fresh.exists()  # a fresh one may belong to a live writer
