import json

import pandas as pd
import pytest

from toporag_lib.data import load_dataset
from toporag_lib.data.dataset import DatasetFileError

RECORDS = {
    "train": [
        {"id": "WebQTrn-0", "question": "what is the name of justin bieber brother",
         "answer": ["Jaxon Bieber"], "q_entity": ["Justin Bieber"], "a_entity": ["Jaxon Bieber"],
         "graph": [["Justin Bieber", "people.person.sibling_s", "m.0gxnnwc"],
                   ["m.0gxnnwc", "people.sibling_relationship.sibling", "Jaxon Bieber"],
                   ["Justin Bieber", "people.person.parents", "Jeremy Bieber"],
                   ["Jaxon Bieber", "people.person.parents", "Jeremy Bieber"],
                   ["Justin Bieber", "people.person.sibling_s", "m.0gxnnwc"],
                   ["Jeremy Bieber", "people.person.children", "Justin Bieber"]]},
        {"id": "WebQTrn-1", "question": "what country is the grand bahama island in",
         "answer": ["Bahamas", "The Bahamas"], "q_entity": ["Grand Bahama"], "a_entity": ["Bahamas"],
         "graph": [["Grand Bahama", "location.location.containedby", "Bahamas"]]},
    ],
    "validation": [
        {"id": "WebQVal-0", "question": "empty one", "answer": ["x"], "q_entity": ["y"], "a_entity": ["x"],
         "graph": []},
    ],
    "test": [
        {"id": "WebQTest-0", "question": "what does jamaican people speak",
         "answer": ["Jamaican English", "Jamaican Creole English Language"], "q_entity": ["Jamaica"],
         "a_entity": ["Jamaican English"],
         "graph": [["Jamaica", "location.country.languages_spoken", "Jamaican English"]]},
    ],
}


def write_jsonl(root):
    for split, records in RECORDS.items():
        (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def write_parquet(root):
    (root / "data").mkdir()
    for split, records in RECORDS.items():
        pd.DataFrame(records).to_parquet(root / "data" / f"{split}-00000-of-00001.parquet")


@pytest.mark.parametrize("writer", [write_jsonl, write_parquet])
def test_loads_rog_records(tmp_path, writer):
    writer(tmp_path)
    ds = load_dataset("webqsp", root=tmp_path)
    assert len(ds) == 3 and ds.dropped == 1 and "WebQVal-0" in ds.notes[0]
    assert ds.split == {"train": [0, 1], "val": [], "test": [2]}
    first = ds[0]
    assert first.question == "Question: what is the name of justin bieber brother\nAnswer: "
    assert first.graph.nodes == ["justin bieber", "m.0gxnnwc", "jaxon bieber", "jeremy bieber"]
    # parallel relations between the same two entities stay separate edges, relation text as is
    assert first.graph.edges[0] == first.graph.edges[4] == (0, 1, "people.person.sibling_s")
    assert first.graph.num_edges == 6
    assert first.meta["answer_nodes"] == [2]
    assert ds[1].label == "bahamas|the bahamas"


def test_missing_folder_and_split_name_what_is_expected(tmp_path):
    with pytest.raises(DatasetFileError, match="RoG-webqsp"):
        load_dataset("webqsp", root=tmp_path / "absent")
    (tmp_path / "train.jsonl").write_text("")
    with pytest.raises(DatasetFileError, match=r"validation\*\.jsonl"):
        load_dataset("webqsp", root=tmp_path)


def test_bad_record_names_file_and_line(tmp_path):
    write_jsonl(tmp_path)
    (tmp_path / "test.jsonl").write_text('{"id": "a"\n')
    with pytest.raises(ValueError, match=r"test.jsonl, line 1"):
        load_dataset("webqsp", root=tmp_path)


def test_bad_triple_names_record(tmp_path):
    write_jsonl(tmp_path)
    bad = dict(RECORDS["test"][0], graph=[["only", "two"]])
    (tmp_path / "test.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"record 0 \(id WebQTest-0\): graph triple 0"):
        load_dataset("webqsp", root=tmp_path)


@pytest.mark.parametrize("change, message", [
    ({"answer": "bahamas"}, r"field 'answer' is str 'bahamas', expected a list"),
    ({"a_entity": "bahamas"}, r"field 'a_entity' is str"),
    ({"graph": None}, r"field 'graph' is NoneType"),
    ({"graph": "drop"}, r"field 'graph' is str"),
])
def test_a_field_of_the_wrong_type_is_refused_not_coerced(tmp_path, change, message):
    write_jsonl(tmp_path)
    record = {**RECORDS["test"][0], **change}
    (tmp_path / "test.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError, match=r"test.jsonl, record 0 \(id WebQTest-0\): " + message):
        load_dataset("webqsp", root=tmp_path)


def test_a_record_without_graph_or_not_an_object_is_named(tmp_path):
    write_jsonl(tmp_path)
    record = {k: v for k, v in RECORDS["test"][0].items() if k != "graph"}
    (tmp_path / "test.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError, match=r"record 0 \(id WebQTest-0\): record lacks \['graph'\]"):
        load_dataset("webqsp", root=tmp_path)
    (tmp_path / "test.jsonl").write_text("[1, 2, 3]\n")
    with pytest.raises(ValueError, match=r"test.jsonl, record 0: a record must be a JSON object, got list"):
        load_dataset("webqsp", root=tmp_path)
