import json

import pandas as pd
import pytest

from toporag_lib.data import load_dataset
from toporag_lib.data.dataset import DatasetFileError, DatasetFormatError

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


# ---------------------------------------------------------------- malformed data is refused, not coerced

def write_records(root, split, *records):
    (root / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("graph, message", [
    (["abc"], r"graph triple 0 is str 'abc', expected a list \[head, relation, tail\] of strings"),
    ([["a", "r", "b"], "xyz"], r"graph triple 1 is str 'xyz'"),
    ([["a", "r", "b"], 7], r"graph triple 1 is int 7"),
    ([["a", None, "b"]], r"graph triple 0's relation is NoneType None, expected a string"),
    ([["a", "r", 5]], r"graph triple 0's tail is int 5, expected a string"),
    ([["a", "r", ["b"]]], r"graph triple 0's tail is list"),
])
def test_a_triple_that_is_not_three_strings_is_refused(tmp_path, graph, message):
    write_jsonl(tmp_path)
    write_records(tmp_path, "test", dict(RECORDS["test"][0], graph=graph))
    with pytest.raises(DatasetFormatError, match=r"test.jsonl, record 0 \(id WebQTest-0\): " + message):
        load_dataset("webqsp", root=tmp_path)


@pytest.mark.parametrize("change, message", [
    ({"id": 5}, r"field 'id' is int 5, expected a string"),
    ({"question": None}, r"field 'question' is NoneType None"),
    ({"answer": ["x", 3]}, r"field 'answer', item 1 is int 3"),
    ({"a_entity": [None]}, r"field 'a_entity', item 0 is NoneType"),
])
def test_a_text_field_that_is_not_a_string_is_refused(tmp_path, change, message):
    write_jsonl(tmp_path)
    write_records(tmp_path, "test", {**RECORDS["test"][0], **change})
    with pytest.raises(DatasetFormatError, match=r"test.jsonl, record 0 \(id .*\): " + message):
        load_dataset("webqsp", root=tmp_path)


@pytest.mark.parametrize("change, message", [
    ({"graph": [["Jamaica\ud800", "r", "x"]]}, r"graph triple 0's head 'Jamaica\\ud800' is not UTF-8 text: "
                                                r"surrogates not allowed"),
    ({"q_entity": ["\udfff"]}, r"field 'q_entity', item 0 .* is not UTF-8 text"),
    ({"question": "what \ud83d"}, r"field 'question' .* is not UTF-8 text"),
])
def test_a_lone_surrogate_is_refused_at_load_time_naming_the_field(tmp_path, change, message):
    write_jsonl(tmp_path)
    (tmp_path / "test.jsonl").write_text(json.dumps({**RECORDS["test"][0], **change}) + "\n")  # "\ud800" escapes
    with pytest.raises(DatasetFormatError, match=r"test.jsonl, record 0 \(id WebQTest-0\): " + message):
        load_dataset("webqsp", root=tmp_path)


def test_a_record_in_two_splits_or_twice_in_one_is_refused(tmp_path):
    write_jsonl(tmp_path)
    write_records(tmp_path, "test", RECORDS["test"][0], RECORDS["train"][1])
    with pytest.raises(DatasetFormatError, match=r"test.jsonl, record 1 \(id WebQTrn-1\): id 'WebQTrn-1' of the "
                                                 r"'test' split is listed also in the 'train' split \(.*train.jsonl, "
                                                 r"record 1"):
        load_dataset("webqsp", root=tmp_path)
    write_jsonl(tmp_path)
    write_records(tmp_path, "validation", RECORDS["validation"][0], RECORDS["validation"][0])  # empty graphs too
    with pytest.raises(DatasetFormatError, match=r"validation.jsonl, record 1 .* 'val' split is listed twice in it"):
        load_dataset("webqsp", root=tmp_path)


def test_a_stray_file_named_like_a_split_is_refused_not_read_as_more_data(tmp_path):
    write_jsonl(tmp_path)
    write_records(tmp_path, "train_backup", *RECORDS["train"])
    with pytest.raises(DatasetFormatError, match=r"train_backup.jsonl: named like a 'train' split file but neither "
                                                 r"train.jsonl nor a shard"):
        load_dataset("webqsp", root=tmp_path)


def test_two_copies_of_a_split_are_refused(tmp_path):
    write_parquet(tmp_path)
    write_records(tmp_path, "train", *RECORDS["train"])
    with pytest.raises(DatasetFormatError, match=r"the 'train' split is there 2 times"):
        load_dataset("webqsp", root=tmp_path)


def test_shards_load_in_order_and_an_incomplete_set_is_refused(tmp_path):
    write_parquet(tmp_path)
    data = tmp_path / "data"
    (data / "train-00000-of-00001.parquet").unlink()
    for k, record in enumerate(RECORDS["train"]):
        pd.DataFrame([record]).to_parquet(data / f"train-{k:05d}-of-00002.parquet")
    ds = load_dataset("webqsp", root=tmp_path)
    assert [s.id for s in ds] == ["WebQTrn-0", "WebQTrn-1", "WebQTest-0"]
    (data / "train-00001-of-00002.parquet").unlink()
    with pytest.raises(DatasetFormatError, match=r"the 'train' split's 2 shards .* incomplete: shard\(s\) \[1\] "
                                                 "missing"):
        load_dataset("webqsp", root=tmp_path)


def test_a_file_that_is_not_utf8_or_not_parquet_is_named(tmp_path):
    write_jsonl(tmp_path)
    (tmp_path / "test.jsonl").write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(DatasetFormatError, match=r"test.jsonl: not UTF-8 text"):
        load_dataset("webqsp", root=tmp_path)
    for path in tmp_path.glob("*.jsonl"):
        path.unlink()
    write_parquet(tmp_path)
    shard = tmp_path / "data" / "test-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(DatasetFormatError, match=r"test-00000-of-00001.parquet: not a parquet table"):
        load_dataset("webqsp", root=tmp_path)


def test_an_id_with_a_lone_surrogate_is_shown_escaped_so_the_message_prints(tmp_path):
    write_jsonl(tmp_path)
    (tmp_path / "test.jsonl").write_text(json.dumps({**RECORDS["test"][0], "id": "a\ud800"}) + "\n")
    with pytest.raises(DatasetFormatError) as err:
        load_dataset("webqsp", root=tmp_path)
    assert r"record 0 (id 'a\ud800'): field 'id' 'a\ud800' is not UTF-8 text" in str(err.value)
    str(err.value).encode("utf-8")
