"""SceneGraphs (GQA) loader: the real fixtures, G-Retriever's textualization, the split, and bad input."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from toporag_lib.data.dataset import DatasetFileError, DatasetFormatError
from toporag_lib.data.gqa import (
    FIXTURES_DIR,
    build_scenegraphs,
    load_gqa_fixtures,
    load_scenegraphs,
    programs_to_gqa_questions,
    questions_from_gqa_json,
    read_questions,
    read_scene_graphs,
    scene_graph_to_graph,
    sklearn_train_test_split,
    split_image_ids,
)
from toporag_lib.data.graph import textualize
from toporag_lib.paths import BUNDLED_DATA

GRAPHVQA_SG = FIXTURES_DIR / "graphvqa_debug_sceneGraphs.json"
EMMA_SG = FIXTURES_DIR / "emma_gqa_scene_graph.json"
EMMA_Q = FIXTURES_DIR / "emma_gqa_questions.json"
PROGRAMS = FIXTURES_DIR / "graphvqa_debug_programs.json"
EXPLAGRAPHS_SPLIT = BUNDLED_DATA / "explagraphs" / "split"


def scenes() -> dict:
    return {**read_scene_graphs(GRAPHVQA_SG), **read_scene_graphs(EMMA_SG)}


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


# ---------------------------------------------------------------- the real fixtures

def test_fixtures_load_and_drop_questions_without_graph():
    ds = load_gqa_fixtures()
    assert len(ds) == 6 and ds.dropped == 5
    assert [s.id for s in ds] == ["142457", "123159", "041477", "041438", "02930152", "07333408"]
    assert "5 question(s) whose image has no scene graph" in ds.notes[0] and "2405722" in ds.notes[0]
    assert sorted(i for idx in ds.split.values() for i in idx) == list(range(6))


def test_fixture_files_and_attribution_are_shipped():
    names = {p.name for p in FIXTURES_DIR.iterdir()}
    assert {"LICENSE.GraphVQA", "LICENSE.emma-datasets", "ATTRIBUTION.md", GRAPHVQA_SG.name, EMMA_SG.name,
            EMMA_Q.name, PROGRAMS.name} <= names
    attribution = (FIXTURES_DIR / "ATTRIBUTION.md").read_text()
    assert all(name in attribution for name in names - {"ATTRIBUTION.md"})


def test_node_and_edge_text_as_g_retriever_on_a_hand_checked_image():
    # graphvqa_debug_sceneGraphs.json, image 2375429: object 722335 is the first object:
    # {"name": "pipe", "x": 104, "y": 1, "w": 17, "h": 167, "attributes": ["white"], "relations": [
    #   to the left of 722333 (4th object), to the right of 722329 (11th), to the right of 722323 (4th),
    #   to the left of 722328 (10th), on 722332 (6th)]}
    sample = next(s for s in load_gqa_fixtures() if s.id == "07333408")
    g = sample.graph
    assert sample.question == "Question: What is on the white wall?\n\nAnswer:" and sample.label == "pipe"
    assert g.nodes[0] == "name: pipe; attribute: white; (x,y,w,h): (104, 1, 17, 167)"
    assert g.nodes[2] == "name: roof; attribute: dark, sloped; (x,y,w,h): (405, 11, 95, 88)"
    assert g.nodes[8] == "name: head; (x,y,w,h): (256, 133, 65, 107)"  # no attributes: no attribute part
    assert g.edges[:5] == [(0, 4, "to the left of"), (0, 10, "to the right of"), (0, 3, "to the right of"),
                           (0, 9, "to the left of"), (0, 5, "on")]
    assert g.nodes[5] == "name: wall; attribute: white; (x,y,w,h): (2, 1, 111, 228)"
    assert sample.meta == {"query": "What is on the white wall?", "image_id": "2375429", "full_answer": "The pipe is on the wall.",
                           "answer_nodes": [0], "question_nodes": [5]}
    first_row = '0,"name: pipe; attribute: white; (x,y,w,h): (104, 1, 17, 167)"'
    assert textualize(g).startswith(f"node_id,node_attr\n{first_row}\n")


def test_node_order_and_edge_count_follow_the_scene_graph():
    all_scenes = scenes()
    for sample in load_gqa_fixtures():
        objects = list(all_scenes[sample.meta["image_id"]]["objects"].values())
        assert [n.split(";")[0] for n in sample.graph.nodes] == [f"name: {o['name']}" for o in objects]
        assert sample.graph.num_edges == sum(len(o["relations"]) for o in objects)
        assert sample.graph.edge_texts == [r["name"] for o in objects for r in o["relations"]]


def test_csv_and_json_questions_give_identical_samples(tmp_path):
    questions = json.loads(EMMA_Q.read_text())
    rows = [{"q_id": qid, "image_id": q["imageId"], "question": q["question"], "answer": q["answer"],
             "full_answer": q["fullAnswer"]} for qid, q in questions.items()]  # as G-Retriever writes it
    pd.DataFrame(rows).to_csv(tmp_path / "questions.csv", index=False)
    write_json(tmp_path / "sceneGraphs.json", read_scene_graphs(EMMA_SG))
    from_csv = load_scenegraphs(tmp_path)  # no questions.json: falls back to questions.csv
    from_json = load_scenegraphs(tmp_path, questions=EMMA_Q)
    assert len(from_csv) == len(from_json) == 4
    assert from_csv.split == from_json.split and from_csv.dropped == from_json.dropped == 5
    for a, b in zip(from_csv, from_json):
        assert (a.id, a.question, a.label, a.graph) == (b.id, b.question, b.label, b.graph)
        assert a.meta == {k: b.meta[k] for k in ("query", "image_id", "full_answer")}


def test_programs_adapter_reads_graphvqa_lists():
    records = read_questions(PROGRAMS)
    assert [(q.qid, q.image_id, q.answer) for q in records] == [("02930152", "2354786", "yes"),
                                                                ("07333408", "2375429", "pipe")]
    converted = programs_to_gqa_questions(json.loads(PROGRAMS.read_text()))
    assert converted["07333408"]["fullAnswer"] == "The pipe is on the wall."
    assert converted["07333408"]["program"][0] == "[722332]=select(wall)"
    with pytest.raises(ValueError, match="programs row 0"):
        programs_to_gqa_questions([["2354786", "Is the sky dark?"]])


# ---------------------------------------------------------------- split

def test_split_reimplementation_matches_real_sklearn():
    from sklearn import model_selection
    for n in [2, 3, 5, 7, 10, 15, 33, 100, 997]:
        for test_size in (0.4, 0.5):
            train, test = model_selection.train_test_split(np.arange(n), test_size=test_size, random_state=42)
            ours = sklearn_train_test_split(n, test_size, 42)
            assert ours[0].tolist() == train.tolist() and ours[1].tolist() == test.tolist()


def test_split_reimplementation_reproduces_g_retrievers_explagraphs_split():
    # These files are G-Retriever's own output of train_test_split(np.arange(2766), 0.4, 42) then (0.5, 42).
    expected = {k: [int(x) for x in (EXPLAGRAPHS_SPLIT / f"{k}_indices.txt").read_text().split()]
                for k in ("train", "val", "test")}
    train, rest = sklearn_train_test_split(2766, 0.4)
    val, test = sklearn_train_test_split(len(rest), 0.5)
    assert train.tolist() == expected["train"]
    assert rest[val].tolist() == expected["val"] and rest[test].tolist() == expected["test"]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 9, 10, 37, 1000])
def test_image_split_properties(n):
    ids = [f"img{i}" for i in range(n)]
    assignment = split_image_ids(ids)
    assert sorted(assignment) == sorted(ids) and assignment == split_image_ids(ids)
    n_rest = math.ceil(0.4 * n)
    sizes = {k: sum(v == k for v in assignment.values()) for k in ("train", "val", "test")}
    assert sizes == {"train": n - n_rest, "val": n_rest - math.ceil(0.5 * n_rest), "test": math.ceil(0.5 * n_rest)}


def test_split_groups_questions_by_image():
    scene = read_scene_graphs(GRAPHVQA_SG)["2375429"]
    all_scenes = {str(i): scene for i in range(40)}
    questions = questions_from_gqa_json({f"q{i}": {"imageId": str(i % 40), "question": "?", "answer": "a"}
                                         for i in range(200)})
    ds = build_scenegraphs("t", all_scenes, questions)
    images = {k: {ds[i].meta["image_id"] for i in idx} for k, idx in ds.split.items()}
    assert sorted(i for idx in ds.split.values() for i in idx) == list(range(200))
    assert not (images["train"] & images["val"] or images["train"] & images["test"] or images["val"] & images["test"])
    assert [len(images[k]) for k in ("train", "val", "test")] == [24, 8, 8]
    assert all(idx == sorted(idx) for idx in ds.split.values())


# ---------------------------------------------------------------- bad input

def test_missing_files_raise_naming_the_file_and_where_to_get_it(tmp_path):
    with pytest.raises(DatasetFileError, match=r"sceneGraphs\.json.*sceneGraphs\.zip.*write_scenes"):
        load_scenegraphs(tmp_path)
    write_json(tmp_path / "sceneGraphs.json", {})
    with pytest.raises(DatasetFileError, match=r"questions\.json.*questions\.csv.*questions1\.2\.zip"):
        load_scenegraphs(tmp_path)
    with pytest.raises(DatasetFileError, match=r"nothere\.csv"):
        load_scenegraphs(tmp_path, questions=tmp_path / "nothere.csv")


def test_relation_to_unknown_object_raises_naming_image_and_object():
    scene = {"objects": {"1": {"name": "cup", "x": 0, "y": 0, "w": 1, "h": 1, "attributes": [],
                               "relations": [{"name": "on", "object": "99"}]}}}
    with pytest.raises(ValueError, match=r"image 555.*object 1.*unknown object 99"):
        scene_graph_to_graph("555", scene)


def test_missing_and_empty_graphs_are_dropped_and_counted(tmp_path):
    scene = read_scene_graphs(EMMA_SG)["2353884"]
    questions = {"a": {"imageId": "1", "question": "q1", "answer": "x"},
                 "b": {"imageId": "2", "question": "q2", "answer": "y"},
                 "c": {"imageId": "3", "question": "q3", "answer": "z"},
                 "d": {"imageId": "2", "question": "q4", "answer": "w"}}
    write_json(tmp_path / "sceneGraphs.json", {"1": scene, "2": {"width": 5, "height": 5, "objects": {}}})
    write_json(tmp_path / "questions.json", questions)
    ds = load_scenegraphs(tmp_path)
    assert [s.id for s in ds] == ["a"] and ds.dropped == 3
    assert any("1 question(s) whose image has no scene graph (image ids 3)" in n for n in ds.notes)
    assert any("2 question(s) whose scene graph is empty" in n and "image ids 2" in n for n in ds.notes)


def test_malformed_questions_raise():
    with pytest.raises(ValueError, match=r"question q7 lacks \['answer'\]"):
        questions_from_gqa_json({"q7": {"imageId": "1", "question": "?"}})


def one_object_scene(**changes) -> dict:
    obj = {"name": "cup", "x": 0, "y": 0, "w": 1, "h": 1, "attributes": [], "relations": []}
    return {"width": 10, "height": 10, "objects": {"1": {**obj, **changes}}}


@pytest.mark.parametrize("scene, message", [
    ({"objects": [{"name": "cup"}]}, r"image 7: 'objects' is a list, expected an object id -> object mapping"),
    (one_object_scene(relations=[{"object": "1"}]), r"image 7: object 1, relation 0 lacks \['name'\]"),
    (one_object_scene(relations=[{"name": "on"}]), r"image 7: object 1, relation 0 lacks \['object'\]"),
    (one_object_scene(relations={"name": "on"}), r"image 7: object 1's 'relations' is a dict, expected a list"),
])
def test_malformed_scene_graphs_name_the_image_and_field(scene, message):
    with pytest.raises(ValueError, match=message):
        scene_graph_to_graph("7", scene)


def test_truncated_json_names_the_file(tmp_path):
    path = tmp_path / "sceneGraphs.json"
    path.write_text('{"7": {"objects": {')
    with pytest.raises(ValueError, match=r"sceneGraphs.json: not valid JSON"):
        read_scene_graphs(path)


# ---------------------------------------------------------------- malformed data is refused, not coerced

@pytest.mark.parametrize("changes, message", [
    ({"attributes": "red"}, r"object 1: 'attributes' is str 'red', expected a list of strings"),
    ({"attributes": ["red", 5]}, r"object 1: attribute 1 is int 5, expected a string"),
    ({"attributes": None}, r"object 1: 'attributes' is NoneType None"),
    ({"name": None}, r"object 1: 'name' is NoneType None, expected a string"),
    ({"name": 5}, r"object 1: 'name' is int 5, expected a string"),
    ({"name": "cup\ud800"}, r"object 1: 'name' 'cup\\ud800' is not UTF-8 text"),
    ({"relations": [{"name": None, "object": "1"}]}, r"object 1, relation 0: 'name' is NoneType None"),
    ({"relations": [{"name": 5, "object": "1"}]}, r"object 1, relation 0: 'name' is int 5"),
    ({"relations": [{"name": "on", "object": 1}]}, r"object 1, relation 0: 'object' \(an object id\) is int 1"),
    ({"x": "0"}, r"object 1: 'x' is str '0', expected a finite number"),
    ({"w": float("nan")}, r"object 1: 'w' is float nan, expected a finite number"),
    ({"h": True}, r"object 1: 'h' is bool True"),
])
def test_an_object_field_of_the_wrong_type_is_refused_naming_image_object_and_field(changes, message):
    with pytest.raises(DatasetFormatError, match=r"image 7: " + message):
        scene_graph_to_graph("7", one_object_scene(**changes))


def test_without_boxes_the_box_is_not_needed_but_with_them_it_is():
    scene = one_object_scene()
    del scene["objects"]["1"]["x"]
    assert scene_graph_to_graph("7", scene, boxes=False).nodes == ["name: cup"]
    with pytest.raises(DatasetFormatError, match=r"image 7: object 1 lacks field 'x'"):
        scene_graph_to_graph("7", scene)


def test_a_bad_scene_graph_names_its_file(tmp_path):
    write_json(tmp_path / "sceneGraphs.json", {"7": one_object_scene(attributes="red")})
    write_json(tmp_path / "questions.json", {"q1": {"imageId": "7", "question": "?", "answer": "cup"}})
    with pytest.raises(DatasetFormatError, match=r"sceneGraphs.json, image 7: object 1: 'attributes' is str"):
        load_scenegraphs(tmp_path)


@pytest.mark.parametrize("changes, message", [
    ({"answer": None}, r"question q1: answer is NoneType None, expected a string"),
    ({"answer": 5}, r"question q1: answer is int 5"),
    ({"question": ["what?"]}, r"question q1: question is list"),
    ({"imageId": 7}, r"question q1: imageId is int 7"),
    ({"fullAnswer": None}, r"question q1: fullAnswer is NoneType"),
    ({"answer": "cup\udfff"}, r"question q1: answer 'cup\\udfff' is not UTF-8 text"),
])
def test_a_question_field_of_the_wrong_type_is_refused(tmp_path, changes, message):
    write_json(tmp_path / "sceneGraphs.json", {"7": one_object_scene()})
    write_json(tmp_path / "questions.json", {"q1": {"imageId": "7", "question": "?", "answer": "cup", **changes}})
    with pytest.raises(DatasetFormatError, match=r"questions.json: " + message):
        load_scenegraphs(tmp_path)


def test_a_key_twice_in_a_json_object_is_refused_not_last_one_wins(tmp_path):
    path = tmp_path / "questions.json"
    path.write_text('{"q1": {"imageId": "7", "question": "?", "answer": "a"}, '
                    '"q1": {"imageId": "7", "question": "?", "answer": "b"}}')
    with pytest.raises(DatasetFormatError, match=r"questions.json: key 'q1' appears twice in one JSON object"):
        read_questions(path)


@pytest.mark.parametrize("body, message", [
    ("1,7,What?\n", r"line 2: 3 fields, expected 5"),
    ("1,7,What?,cup,The cup.,extra\n", r"line 2: 6 fields, expected 5"),
    ("1,7,What?,cup,The cup.\n1,7,Again?,cup,The cup.\n", r"line 3: question id '1' is on line 2 too"),
    ('1,7,"What?,cup,The cup.\n', r"line 2: not CSV \(unexpected end of data\)"),  # a quote never closed
    ('1,7,"What?\nreally?",cup,The cup.\n', r"line 3: a field runs over more than one line"),
])
def test_a_csv_row_cut_off_padded_or_repeated_is_refused(tmp_path, body, message):
    path = tmp_path / "questions.csv"
    path.write_text("q_id,image_id,question,answer,full_answer\n" + body)
    with pytest.raises(DatasetFormatError, match=r"questions.csv, " + message):
        read_questions(path)


def test_programs_rows_that_are_short_not_lists_or_repeated_are_refused(tmp_path):
    row = ["7", "Is it?", [], "q1", "yes", "Yes."]
    with pytest.raises(DatasetFormatError, match=r"programs.json: programs row 1: question id 'q1' is in an "
                                                 r"earlier row too"):
        read_questions(write_json(tmp_path / "programs.json", [row, row]))
    with pytest.raises(DatasetFormatError, match=r"programs row 0 is str 'abc'"):
        read_questions(write_json(tmp_path / "programs.json", ["abc"]))
    with pytest.raises(DatasetFormatError, match=r"programs row 0: the question id \(field 3\) is int 1"):
        read_questions(write_json(tmp_path / "programs.json", [["7", "Is it?", [], 1, "yes", "Yes."]]))


def test_a_question_id_in_two_question_files_is_refused(tmp_path):
    write_json(tmp_path / "sceneGraphs.json", {"7": one_object_scene()})
    questions = read_questions(write_json(tmp_path / "q.json", {"q1": {"imageId": "7", "question": "?",
                                                                       "answer": "a"}}))
    with pytest.raises(DatasetFormatError, match=r"question id 'q1' is given twice"):
        build_scenegraphs("t", read_scene_graphs(tmp_path / "sceneGraphs.json"), questions + questions)
