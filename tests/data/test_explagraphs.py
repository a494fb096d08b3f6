import io
import re

import pandas as pd
import pytest

from toporag_lib.data import load_dataset
from toporag_lib.data.dataset import DatasetFileError, DatasetFormatError
from toporag_lib.data.explagraphs import BUNDLED_ROOT, GraphParseError, parse_graph
from toporag_lib.data.graph import textualize


@pytest.fixture(scope="module")
def explagraphs():
    return load_dataset("explagraphs")


def gretriever_desc(graph: str) -> str:
    """G-Retriever's path, step by step: parse, write both CSVs, read them back, write them again."""
    nodes, edges = {}, []
    for tri in re.findall(r"\((.*?)\)", graph):
        src, rel, dst = tri.split(";")
        src, dst = src.lower().strip(), dst.lower().strip()
        for name in (src, dst):
            if name not in nodes:
                nodes[name] = len(nodes)
        edges.append({"src": nodes[src], "edge_attr": rel.lower().strip(), "dst": nodes[dst]})
    node_csv = pd.DataFrame(nodes.items(), columns=["node_attr", "node_id"]).to_csv(
        index=False, columns=["node_id", "node_attr"])
    edge_csv = pd.DataFrame(edges).to_csv(index=False, columns=["src", "edge_attr", "dst"])
    nodes_back, edges_back = pd.read_csv(io.StringIO(node_csv)), pd.read_csv(io.StringIO(edge_csv))
    return nodes_back.to_csv(index=False) + "\n" + edges_back.to_csv(index=False)


def test_sizes_labels_and_split(explagraphs):
    assert len(explagraphs) == 2766
    assert {k: len(v) for k, v in explagraphs.split.items()} == {"train": 1659, "val": 553, "test": 554}
    all_ids = sorted(i for ids in explagraphs.split.values() for i in ids)
    assert all_ids == list(range(2766))
    labels = [s.label for s in explagraphs]
    assert labels.count("support") == 1534 and labels.count("counter") == 1232


def test_question_text(explagraphs):
    assert explagraphs[0].question == (
        "Argument 1: Cannabis should be legal.\n"
        "Argument 2: It's not a bad thing to make marijuana more available.\n"
        "Question: Do argument 1 and argument 2 support or counter each other? Answer in one word in the form of "
        "'support' or 'counter'.\n\nAnswer:")


def test_textualization_matches_gretriever_on_all_graphs(explagraphs):
    table = pd.read_csv(BUNDLED_ROOT / "train_dev.tsv", sep="\t")
    mismatches = [i for i, raw in enumerate(table.graph) if textualize(explagraphs[i].graph) != gretriever_desc(raw)]
    assert mismatches == []


def test_first_graph_by_hand(explagraphs):
    g = explagraphs[0].graph
    assert g.nodes == ["cannabis", "marijuana", "legal", "more available", "good thing"]
    assert g.edges[0] == (0, 1, "synonym of") and g.edges[3] == (4, 2, "desires")


def test_unparsable_graph_names_the_row():
    with pytest.raises(GraphParseError, match="row 7"):
        parse_graph("(a; b)(c; d; e)", row=7)
    with pytest.raises(GraphParseError, match="row 8: no"):
        parse_graph("no triples here", row=8)


def test_malformed_file_names_row_and_file(tmp_path):
    (tmp_path / "split").mkdir()
    for name in ("train", "val", "test"):
        (tmp_path / "split" / f"{name}_indices.txt").write_text("0")
    (tmp_path / "train_dev.tsv").write_text("arg1\targ2\tlabel\tgraph\nA\tB\tsupport\t(x; y)\n")
    with pytest.raises(GraphParseError, match=r"row 0 of .*train_dev.tsv"):
        load_dataset("explagraphs", root=tmp_path)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(DatasetFileError, match=r"train_dev.tsv.*G-Retriever"):
        load_dataset("explagraphs", root=tmp_path)


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        load_dataset("nope")


def write_explagraphs(root, graph="(a; is a; b)", splits=("0", "1", "2"), rows=None):
    (root / "split").mkdir(exist_ok=True)
    for name, lines in zip(("train", "val", "test"), splits):
        (root / "split" / f"{name}_indices.txt").write_text(lines)
    body = rows if rows is not None else "".join(f"A\tB\tsupport\t{graph}\n" for _ in range(3))
    (root / "train_dev.tsv").write_text("arg1\targ2\tlabel\tgraph\n" + body)


@pytest.mark.parametrize("graph", ["(a; is a; b)(c; part of", "(a; is a; b) c; d; e)", "(a; is a; b))"])
def test_a_graph_cut_mid_triple_or_with_unbalanced_parentheses_is_refused(tmp_path, graph):
    write_explagraphs(tmp_path, graph)
    with pytest.raises(GraphParseError, match=r"row 0 of .*train_dev.tsv: graph .* is not a sequence of whole"):
        load_dataset("explagraphs", root=tmp_path)


@pytest.mark.parametrize("splits, message", [
    (("0 1", "1", "2"), r"val_indices.txt, line 1: row 1 is listed also in the train split"),
    (("0\n0", "1", "2"), r"train_indices.txt, line 2: row 0 is listed twice"),
    (("0", "1", "9"), r"test_indices.txt, line 1: '9' is not a row index of train_dev.tsv \(0 to 2\)"),
    (("0", "x", "2"), r"val_indices.txt, line 1: 'x' is not a row index"),
])
def test_split_files_that_overlap_or_point_nowhere_are_refused(tmp_path, splits, message):
    write_explagraphs(tmp_path, splits=tuple(s.replace(" ", "\n") for s in splits))
    with pytest.raises(ValueError, match=message):
        load_dataset("explagraphs", root=tmp_path)


def test_a_row_with_an_extra_field_names_the_file(tmp_path):
    write_explagraphs(tmp_path, rows="A\tB\tsupport\t(a; b; c)\nA\tB\tsupport\t(a; b; c)\textra\n")
    with pytest.raises(ValueError, match=r"train_dev.tsv: not a tab-separated table"):
        load_dataset("explagraphs", root=tmp_path)


@pytest.mark.parametrize("rows, message", [
    ("A\tB\tsupport\t(a; b; c)\nA\tB\n", r"row 1: field 'label' is empty \(a line cut off\?\)"),
    ("A\tB\tsupport\t(a; b; c)\nA\tB\tsupport\n", r"row 1: field 'graph' is empty"),
    ("A\t \tsupport\t(a; b; c)\nA\tB\tsupport\t(a; b; c)\n", r"row 0: field 'arg2' is empty"),
])
def test_a_row_with_an_empty_or_missing_field_is_refused(tmp_path, rows, message):
    write_explagraphs(tmp_path, rows=rows, splits=("0", "1", ""))
    with pytest.raises(DatasetFormatError, match=r"train_dev.tsv, " + message):
        load_dataset("explagraphs", root=tmp_path)


def test_a_row_in_no_split_is_refused(tmp_path):
    write_explagraphs(tmp_path, splits=("0", "1", ""))
    with pytest.raises(DatasetFormatError, match=r"train_dev.tsv: 1 row\(s\) in no split file \(rows \[2\]\); the "
                                                 r"split files list 2 of its 3 rows"):
        load_dataset("explagraphs", root=tmp_path)


def test_the_named_errors_are_one_class():
    assert issubclass(GraphParseError, DatasetFormatError) and issubclass(DatasetFormatError, ValueError)
