"""lift_many: exactly the per-graph lift (cells, order, B1, B2, index tensors), for every option; invariants."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lifting import dense, extra_parallel, graphs, rank

from toporag_lib.data.graph import TextualGraph
from toporag_lib.study.efficiency import random_multigraph
from toporag_lib.topology import TREES, CellComplex, lift, lift_many, lifting_many
from toporag_lib.topology.bulk_index import unchecked_csc

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ARRAYS = ("edge_src", "edge_dst", "cell_ptr", "cell_nodes", "cell_edges", "cell_signs", "cell_generator")
INDEX_KEYS = ("B1", "B2", "inc1", "inc2", "adj0", "adj1")
OPTIONS = st.fixed_dictionaries({
    "tree": st.sampled_from(TREES), "seed": st.integers(0, 3), "parallel": st.sampled_from(["digon", "ignore"]),
    "max_cycle_len": st.sampled_from([None, 0, 1, 2, 3, 5])})


def lazy_indices(cc: CellComplex) -> dict:
    """What `lift`'s complex builds on first use, under the memo keys `lift_many` fills."""
    return {"B1": cc.boundary(1), "B2": cc.boundary(2), "inc1": cc.incidence_index(1), "inc2": cc.incidence_index(2),
            "adj0": cc.upper_adjacency_index(0), "adj1": cc.upper_adjacency_index(1)}


def assert_same_complex(batched: CellComplex, alone: CellComplex) -> None:
    assert batched.num_nodes == alone.num_nodes and batched.options == alone.options
    for name in ARRAYS:
        a, b = getattr(batched, name), getattr(alone, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert (batched.tree_mask is None) == (alone.tree_mask is None)
    if alone.tree_mask is not None:
        assert np.array_equal(batched.tree_mask, alone.tree_mask)
    expected = lazy_indices(alone)
    for key in INDEX_KEYS:
        got = batched._memo[key] if key in batched._memo else lazy_indices(batched)[key]
        if key.startswith("B"):
            got.check_format(full_check=True)
            assert got.shape == expected[key].shape
            for part in ("data", "indices", "indptr"):
                a, b = getattr(got, part), getattr(expected[key], part)
                assert a.dtype == b.dtype and np.array_equal(a, b), (key, part)
        else:
            assert got.dtype == expected[key].dtype and torch.equal(got, expected[key]), key


@SETTINGS
@given(st.lists(graphs(), min_size=1, max_size=6), OPTIONS)
def test_equals_per_graph_lift_for_every_option(batch, options):
    for batched, graph in zip(lift_many(batch, **options), batch, strict=True):
        assert set(batched._memo) == set(INDEX_KEYS)  # built in bulk, nothing left to build lazily
        assert_same_complex(batched, lift(graph, **options))


@pytest.mark.parametrize("options", [{"tree": tree} for tree in TREES] + [{"basis": "minimum"}])
def test_equals_per_graph_lift_on_larger_random_multigraphs_in_several_unions(options, monkeypatch):
    monkeypatch.setattr(lifting_many, "CHUNK_EDGES", 300)  # several disjoint unions, one graph larger than one
    rng = np.random.default_rng(7)
    sizes = np.append(rng.integers(1, 40, 60), 200)
    batch = [random_multigraph(int(n), int(n - 1 + rng.integers(0, 2 * n)), rng, connected=bool(k % 2))
             for k, n in enumerate(sizes)]
    for batched, graph in zip(lift_many(batch, seed=3, **options), batch, strict=True):
        assert_same_complex(batched, lift(graph, seed=3, **options))


@SETTINGS
@given(st.lists(graphs(), min_size=1, max_size=4), st.sampled_from(TREES))
def test_indices_false_leaves_them_to_be_built_on_first_use(batch, tree):
    for batched, graph in zip(lift_many(batch, tree=tree, indices=False), batch, strict=True):
        assert batched._memo == {}
        assert_same_complex(batched, lift(graph, tree=tree))


@SETTINGS
@given(st.lists(graphs(), min_size=1, max_size=5), st.sampled_from(TREES))
def test_boundary_of_boundary_is_zero_and_2cells_span_the_cycle_space(batch, tree):
    for cc, graph in zip(lift_many(batch, tree=tree), batch, strict=True):
        b1, b2 = dense(cc.boundary(1)), dense(cc.boundary(2))
        assert not np.any(b1 @ b2)
        expected = graph.num_independent_cycles() + extra_parallel(graph)
        assert rank(b2) == b2.shape[1] == expected


def test_index_tensors_own_just_their_range():
    """Saving one complex's index tensor must not write the whole batch's buffer (torch saves whole storages)."""
    for cc in lift_many([random_multigraph(12, 30, np.random.default_rng(k)) for k in range(5)]):
        for key in ("inc1", "inc2", "adj0", "adj1"):
            tensor = cc._memo[key]
            assert tensor.is_contiguous() and tensor.untyped_storage().nbytes() == tensor.numel() * 8


def test_empty_batches_graphs_without_edges_and_bad_input():
    assert lift_many([]) == []
    lonely = TextualGraph(["a", "b"], [])
    (cc,) = lift_many([lonely])
    assert_same_complex(cc, lift(lonely))
    with pytest.raises(ValueError, match="no nodes"):
        lift_many([lonely, TextualGraph([], [])])
    with pytest.raises(ValueError, match="tree"):
        lift_many([lonely], tree="widest")
    broken = TextualGraph(["a", "b"], [(0, 1, "r")])
    broken.edges.append((0, 5, "outside"))
    with pytest.raises(ValueError, match="its own graph"):
        lift_many([lonely, broken])


def test_unchecked_csc_is_the_checked_matrix():
    data, rows, ptr = np.array([-1, 1, 1], np.int32), np.array([0, 2, 1], np.int64), np.array([0, 2, 3], np.int64)
    fast, checked = unchecked_csc(data, rows, ptr, (3, 2)), sp.csc_array((data, rows, ptr), shape=(3, 2))
    assert vars(fast).keys() == vars(checked).keys()
    assert np.array_equal(fast.toarray(), checked.toarray()) and fast.shape == checked.shape


def test_unchecked_complex_has_the_fields_of_a_constructed_one():
    cc = lift(random_multigraph(6, 9, np.random.default_rng(0)))
    values = [getattr(cc, name) for name in vars(cc)]
    assert vars(CellComplex.unchecked(*values)).keys() == vars(cc).keys()
