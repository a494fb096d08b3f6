import pytest
import torch

from toporag_lib.data.graph import QASample, TextualGraph, textualize


def test_edge_index_and_counts():
    g = TextualGraph(["a", "b", "c"], [(0, 1, "x"), (1, 2, "y"), (2, 0, "z"), (0, 1, "w")])
    assert g.edge_index.tolist() == [[0, 1, 2, 0], [1, 2, 0, 1]]
    assert g.edge_texts == ["x", "y", "z", "w"]
    assert g.num_components() == 1
    assert g.num_independent_cycles() == 1  # the parallel edge does not count in the simple graph


def test_empty_edges_give_empty_index():
    g = TextualGraph(["a", "b"], [])
    assert g.edge_index.shape == (2, 0) and g.edge_index.dtype == torch.long
    assert g.num_components() == 2 and g.num_independent_cycles() == 0


def test_self_loops_and_components():
    g = TextualGraph(["a", "b", "c", "d"], [(0, 0, "self"), (1, 2, "r"), (2, 1, "back")])
    assert g.num_components() == 3
    assert g.num_independent_cycles() == 0


def test_edge_to_unknown_node_is_rejected():
    with pytest.raises(ValueError, match=r"edge 1 \(1 -> 5\)"):
        TextualGraph(["a", "b"], [(0, 1, "x"), (1, 5, "y")])


def test_textualize_quotes_like_pandas():
    g = TextualGraph(["a, b", 'say "hi"'], [(0, 1, "rel, with comma")])
    assert textualize(g) == ('node_id,node_attr\n0,"a, b"\n1,"say ""hi"""\n\n'
                             'src,edge_attr,dst\n0,"rel, with comma",1\n')


def test_textualize_subgraph_keeps_original_ids():
    g = TextualGraph(["a", "b", "c"], [(0, 1, "x"), (1, 2, "y")])
    assert textualize(g, node_ids=[1, 2], edge_ids=[1]) == "node_id,node_attr\n1,b\n2,c\n\nsrc,edge_attr,dst\n1,y,2\n"


def test_qasample_meta_defaults_to_empty():
    s = QASample("1", "q", "a", TextualGraph(["n"], []))
    assert s.meta == {}


def test_take_keeps_each_samples_split():
    from toporag_lib.data.dataset import QADataset

    g = TextualGraph(["n"], [])
    ds = QADataset("d", [QASample(str(i), "q", "a", g) for i in range(5)], {"train": [0, 1], "val": [2], "test": [3, 4]})
    part = ds.take([4, 2, 0])
    assert [s.id for s in part] == ["4", "2", "0"]
    assert part.split == {"train": [2], "val": [1], "test": [0]}
