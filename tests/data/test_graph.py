import csv
import io

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from toporag_lib.data.errors import DatasetFormatError
from toporag_lib.data.graph import QASample, TextualGraph, edges_frame, nodes_frame, textualize


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


# ---------------------------------------------------------------- malformed graphs are refused, not coerced

@pytest.mark.parametrize("nodes, edges, message", [
    (["a", "b"], [(0, 1.7, "r")], r"edge 0's target is float 1.7: expected an integer node id"),
    (["a", "b"], [(0, 1.0, "r")], r"edge 0's target is float 1.0"),
    (["a", "b"], [(True, 1, "r")], r"edge 0's source is bool True"),
    (["a", "b"], [(0, "1", "r")], r"edge 0's target is str '1'"),
    (["a", "b"], [(0, 1, None)], r"edge 0's text is NoneType None: expected a string"),
    (["a", 5], [], r"node 1's text is int 5: expected a string"),
    (["a", "b\ud800"], [], r"node 1's text 'b\\ud800' is not UTF-8 text: surrogates not allowed"),
    (["a", "b"], [(0, 1, "\udc80")], r"edge 0's text '\\udc80' is not UTF-8 text"),
])
def test_a_graph_with_a_non_integer_end_or_non_text_is_refused(nodes, edges, message):
    with pytest.raises(DatasetFormatError, match=message):
        TextualGraph(nodes, edges)


def test_numpy_integer_ends_are_integers():
    g = TextualGraph(["a", "b"], [(np.int64(0), np.int32(1), "r")])
    assert g.edge_index.tolist() == [[0], [1]] and textualize(g).endswith("src,edge_attr,dst\n0,r,1\n")


def test_a_carriage_return_is_quoted_as_the_csv_module_quotes_it():
    g = TextualGraph(["a\rb", "c"], [(0, 1, "x\ry")])
    text = textualize(g)
    assert text == 'node_id,node_attr\n0,"a\rb"\n1,c\n\nsrc,edge_attr,dst\n0,"x\ry",1\n'
    nodes_csv = text.split("\n\n")[0]
    rows = [["node_id", "node_attr"], ["0", "a\rb"], ["1", "c"]]
    assert list(csv.reader(io.StringIO(nodes_csv, newline=""))) == rows
    out = io.StringIO()
    csv.writer(out).writerow(["0", "a\rb"])  # the csv module's own quoting (its "\r\n" ending aside)
    assert out.getvalue() == '0,"a\rb"\r\n'


texts = st.text(st.sampled_from(list('ab ,"\n\r;\t\'') + ["é", "ü"]), max_size=8)


@settings(max_examples=50, deadline=None)
@given(st.lists(texts, min_size=1, max_size=4), st.lists(texts, max_size=4))
def test_textualize_is_pandas_byte_for_byte_but_for_carriage_returns_and_reads_back(nodes, relations):
    g = TextualGraph(nodes, [(j % len(nodes), (j + 1) % len(nodes), r) for j, r in enumerate(relations)])
    text = textualize(g)
    pandas_text = nodes_frame(g).to_csv(index=False) + "\n" + edges_frame(g).to_csv(index=False)
    if not any("\r" in t for t in nodes + relations):
        assert text == pandas_text
    nodes_csv, edges_csv = text[:text.index("\nsrc,edge_attr,dst\n")], text[text.index("src,edge_attr,dst\n"):]
    read = pd.read_csv(io.StringIO(nodes_csv), dtype=str, keep_default_na=False)
    assert read.node_attr.tolist() == nodes
    if relations:
        read = pd.read_csv(io.StringIO(edges_csv), dtype=str, keep_default_na=False)
        assert read.edge_attr.tolist() == relations


def test_a_sample_in_two_splits_or_twice_in_one_or_at_a_float_index_is_refused():
    from toporag_lib.data.dataset import QADataset

    samples = [QASample(str(i), "q", "a", TextualGraph(["n"], [])) for i in range(3)]
    with pytest.raises(DatasetFormatError, match=r"d: sample 1 \(id 1\) is listed in both 'train' and 'test'"):
        QADataset("d", samples, {"train": [0, 1], "val": [2], "test": [1]})
    with pytest.raises(DatasetFormatError, match=r"d: sample 0 \(id 0\) is listed twice"):
        QADataset("d", samples, {"train": [0, 0], "val": [], "test": []})
    with pytest.raises(DatasetFormatError, match=r"split 'val' has indices that are not integers in 0..2: \[1.0\]"):
        QADataset("d", samples, {"train": [0], "val": [1.0], "test": []})
