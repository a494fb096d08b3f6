"""Every bundled file format, damaged at random: the loader raises DatasetFormatError or returns exactly what the
undamaged parts mean, never a silent change and never another exception.

Each damage knows its verdict: "error" (the file no longer says what it said: a field dropped or of another type, a
line cut off, junk, a record twice), "same" (harmless: an unknown extra field, a blank line, damage to a scene graph
no question asks about), or an expected dataset computed here, independently (a CSV line cut off that still parses
as a row means that row).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toporag_lib.data import load_dataset
from toporag_lib.data.errors import DatasetFormatError
from toporag_lib.data.explagraphs import BUNDLED_ROOT as EXPLAGRAPHS_ROOT
from toporag_lib.data.gqa import FIXTURES_DIR, GQAQuestion, build_scenegraphs, load_scenegraphs, read_scene_graphs
from toporag_lib.data.webqsp import FIELDS
from toporag_lib.paths import BUNDLED_DATA

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONE = st.sampled_from(["\ud800", "\udbff", "\udc80", "\udfff"])  # lone surrogates, written as JSON escapes
NOT_TEXT = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.booleans(),
                     st.lists(st.text(max_size=3), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(),
                                                                                 max_size=2))
NOT_LIST = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.text(max_size=6),
                     st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
NOT_NUMBER = st.one_of(st.none(), st.booleans(), st.text(max_size=4), st.lists(st.integers(), max_size=2),
                       st.just(float("nan")), st.just(float("inf")))
JUNK = st.one_of(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=20)
                 .filter(str.strip),
                 st.builds(json.dumps, st.one_of(st.none(), st.integers(), st.text(max_size=5),
                                                 st.lists(st.integers(), max_size=3))))


def summary(dataset, root: Path | None = None) -> tuple:
    """What a dataset says: its samples, split and drops (notes with the folder's name taken out)."""
    notes = [n.replace(str(root), "ROOT") for n in dataset.notes] if root else dataset.notes
    return ([(s.id, s.question, s.label, s.graph, s.meta) for s in dataset], dataset.split, dataset.dropped, notes)


def check(load, expect) -> None:
    """`expect` is "error", or the summary the load must give; any exception but DatasetFormatError fails."""
    if expect == "error":
        with pytest.raises(DatasetFormatError):
            load()
    else:
        assert load() == expect


def string_paths(value, path=()):
    """The paths (keys and indices) to every string value inside `value`."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, (dict, list)):
        for key, inner in value.items() if isinstance(value, dict) else enumerate(value):
            yield from string_paths(inner, (*path, key))


def set_in(value, path, new):
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


def get_in(value, path):
    for key in path:
        value = value[key]
    return value


# ---------------------------------------------------------------- WebQSP: RoG's JSON lines

WEBQSP = BUNDLED_DATA / "webqsp_fixture"
ROG = ("train", "validation", "test")


@functools.lru_cache
def webqsp_reference():
    return summary(load_dataset("webqsp", root=WEBQSP), WEBQSP)


def damage_webqsp(draw, lines: dict[str, list[str]], root: Path) -> str | tuple:
    """Damage one record (or its file); returns the verdict."""
    split = draw(st.sampled_from(ROG))
    k = draw(st.integers(0, len(lines[split]) - 1))
    record = json.loads(lines[split][k])
    op = draw(st.sampled_from(["drop", "retype", "item", "surrogate", "truncate", "junk", "duplicate", "stray",
                               "extra", "blank"]))
    verdict = "error"
    if op == "drop":
        del record[draw(st.sampled_from(FIELDS))]
    elif op == "retype":
        field = draw(st.sampled_from(FIELDS))
        record[field] = draw(NOT_TEXT if field in ("id", "question") else NOT_LIST)
    elif op == "item":
        field = draw(st.sampled_from([f for f in ("answer", "q_entity", "a_entity", "graph") if record[f]] or ["id"]))
        if field == "id":
            record["id"] = draw(NOT_TEXT)
        else:
            i = draw(st.integers(0, len(record[field]) - 1))
            if field != "graph":
                record[field][i] = draw(NOT_TEXT)
            else:  # a triple that is a string ("abc" is three letters), a number, too short or long, or not text
                triple = record["graph"][i]
                part = draw(st.integers(0, 2))
                bad_part = triple[:part] + [draw(NOT_TEXT)] + triple[part + 1:]
                record["graph"][i] = draw(st.sampled_from([bad_part, "".join(s[:1] for s in triple), 3, triple[:2],
                                                           [*triple, "x"]]))
    elif op == "surrogate":
        path = draw(st.sampled_from(list(string_paths(record))))
        text = get_in(record, path)
        cut = draw(st.integers(0, len(text)))
        set_in(record, path, text[:cut] + draw(LONE) + text[cut:])
    elif op == "extra":
        record[draw(st.text(min_size=1, max_size=5).filter(lambda t: t not in FIELDS))] = draw(NOT_LIST)
        verdict = webqsp_reference()
    line = json.dumps(record)  # ensure_ascii: a lone surrogate is written as its \ud800 escape, as RoG's files can
    if op == "truncate":
        line = lines[split][k][:draw(st.integers(1, len(lines[split][k]) - 1))]
    if op in ("junk", "blank"):
        lines[split].insert(k, draw(JUNK) if op == "junk" else draw(st.sampled_from(["", " ", "\t"])))
        verdict = "error" if op == "junk" else webqsp_reference()
    elif op == "duplicate":
        lines[draw(st.sampled_from(ROG))].append(lines[split][k])
    elif op == "stray":
        name = draw(st.sampled_from([f"{split}_backup.jsonl", f"{split}-copy.jsonl", f"{split}2.jsonl",
                                     f"{split}.old.jsonl", f"old/{split}.jsonl"]))
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text("\n".join(lines[split]) + "\n")
    else:
        lines[split][k] = line
    return verdict


@FUZZ
@given(st.data())
def test_webqsp_damage_is_refused_or_harmless(data):
    lines = {s: (WEBQSP / f"{s}.jsonl").read_text().splitlines() for s in ROG}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        verdict = damage_webqsp(data.draw, lines, root)
        for split, text in lines.items():
            (root / f"{split}.jsonl").write_text("\n".join(text) + "\n")
        check(lambda: summary(load_dataset("webqsp", root=root), root), verdict)


# ---------------------------------------------------------------- GQA: scene-graph JSON, question JSON, questions CSV

SCENES = FIXTURES_DIR / "emma_gqa_scene_graph.json"
QUESTIONS = FIXTURES_DIR / "emma_gqa_questions.json"
OBJECT_FIELDS = ("name", "attributes", "relations", "x", "y", "w", "h")


def load_gqa(root: Path, questions: str = "questions.json"):
    return summary(load_scenegraphs(root, questions=root / questions), root)


@functools.lru_cache
def gqa_reference():
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        shutil.copy(SCENES, root / "sceneGraphs.json")
        shutil.copy(QUESTIONS, root / "questions.json")
        return load_gqa(root)


def json_damage(draw, text: str) -> str | None:
    """Damage to the JSON text itself: cut off, or an object's key given twice (json would keep the last)."""
    op = draw(st.sampled_from(["truncate", "duplicate key", None, None, None]))
    if op == "truncate":
        return text[:draw(st.integers(1, len(text) - 1))]
    if op == "duplicate key":
        data = json.loads(text)
        key = draw(st.sampled_from(list(data)))
        return "{" + json.dumps(key) + ": " + json.dumps(data[key]) + ", " + text[1:]
    return None


def damage_scene(draw, scenes: dict, asked: set[str]):
    """Damage one object of one image; an image no question asks about is never read, so loads the same."""
    image = draw(st.sampled_from(sorted(scenes)))
    oid = draw(st.sampled_from(sorted(scenes[image]["objects"])))
    obj = scenes[image]["objects"][oid]
    op = draw(st.sampled_from(["drop", "retype", "attribute", "relation", "surrogate", "extra"]))
    if op == "drop":
        del obj[draw(st.sampled_from(OBJECT_FIELDS))]
    elif op == "retype":
        field = draw(st.sampled_from(OBJECT_FIELDS))
        obj[field] = draw(NOT_TEXT if field == "name" else NOT_LIST if field in ("attributes", "relations")
                          else NOT_NUMBER)
    elif op == "attribute":
        obj["attributes"].insert(draw(st.integers(0, len(obj["attributes"]))), draw(NOT_TEXT))
    elif op == "relation":
        relation = {"name": "on", "object": draw(st.sampled_from(sorted(scenes[image]["objects"])))}
        field = draw(st.sampled_from(["name", "object", "unknown", "drop"]))
        if field == "unknown":
            relation["object"] = "no such object"
        elif field == "drop":
            del relation[draw(st.sampled_from(["name", "object"]))]
        else:
            relation[field] = draw(NOT_TEXT)
        obj["relations"].append(relation)
    elif op == "surrogate":
        path = draw(st.sampled_from([("name",)] + [("attributes", i) for i in range(len(obj["attributes"]))]
                                    + [("relations", i, "name") for i in range(len(obj["relations"]))]))
        set_in(obj, path, get_in(obj, path) + draw(LONE))
    else:
        obj[draw(st.text(min_size=1, max_size=5).filter(lambda t: t not in OBJECT_FIELDS))] = draw(NOT_LIST)
        return gqa_reference()
    return "error" if image in asked else gqa_reference()


def damage_question(draw, questions: dict):
    qid = draw(st.sampled_from(sorted(questions)))
    record = questions[qid]
    op = draw(st.sampled_from(["drop", "retype", "surrogate", "extra"]))
    if op == "drop":
        del record[draw(st.sampled_from(["imageId", "question", "answer"]))]
    elif op == "retype":
        record[draw(st.sampled_from(["imageId", "question", "answer", "fullAnswer"]))] = draw(NOT_TEXT)
    elif op == "surrogate":
        field = draw(st.sampled_from(["imageId", "question", "answer", "fullAnswer"]))
        record[field] = record[field] + draw(LONE)
    else:  # GQA's records carry many fields this project does not read
        record["zz" + draw(st.text(max_size=4))] = draw(NOT_LIST)
        return gqa_reference()
    return "error"


@FUZZ
@given(st.data())
def test_gqa_json_damage_is_refused_or_harmless(data):
    scenes, questions = json.loads(SCENES.read_text()), json.loads(QUESTIONS.read_text())
    asked = {q["imageId"] for q in questions.values()}
    scenes["unasked"] = json.loads(json.dumps(scenes[min(scenes)]))  # no question asks about it: never read
    which = data.draw(st.sampled_from(["sceneGraphs.json", "questions.json"]))
    verdict = damage_scene(data.draw, scenes, asked) if which == "sceneGraphs.json" else \
        damage_question(data.draw, questions)
    texts = {"sceneGraphs.json": json.dumps(scenes), "questions.json": json.dumps(questions)}
    damaged = json_damage(data.draw, texts[which])
    if damaged is not None:
        texts[which], verdict = damaged, "error"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, text in texts.items():
            (root / name).write_text(text)
        check(lambda: load_gqa(root), verdict)


def csv_rows() -> list[list[str]]:
    """G-Retriever's questions.csv rows of the emma questions (the header first)."""
    questions = json.loads(QUESTIONS.read_text())
    return [["q_id", "image_id", "question", "answer", "full_answer"]] + [
        [qid, q["imageId"], q["question"], q["answer"], q["fullAnswer"]] for qid, q in questions.items()]


def csv_line(row: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(row)
    return out.getvalue()


@FUZZ
@given(st.data())
def test_gqa_csv_damage_is_refused_or_means_what_is_left(data):
    draw = data.draw
    rows = csv_rows()
    lines = [csv_line(r) for r in rows]
    k = draw(st.integers(1, len(lines) - 1))
    op = draw(st.sampled_from(["drop field", "extra field", "duplicate", "truncate", "blank"]))
    verdict = "error"
    if op == "drop field":
        del rows[k][draw(st.integers(0, 4))]
        lines[k] = csv_line(rows[k])
    elif op == "extra field":
        lines[k] += "," + csv_line([draw(st.text(max_size=5))])
    elif op == "duplicate":
        lines.insert(draw(st.integers(1, len(lines))), lines[k])
    elif op == "blank":
        lines.insert(draw(st.integers(1, len(lines))), "")
        verdict = gqa_reference_from_csv(rows)
    else:  # cut off: a line that still reads as five fields (alone) means those five fields, else it is refused
        lines[k] = lines[k][:draw(st.integers(1, len(lines[k]) - 1))]
        try:
            alone = next(csv.reader([lines[k]], strict=True))
        except csv.Error:  # a quote never closed: it would swallow the lines after it
            alone = []
        if len(alone) == 5:
            rows[k] = alone
            verdict = gqa_reference_from_csv(rows)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        shutil.copy(SCENES, root / "sceneGraphs.json")
        (root / "questions.csv").write_text("\n".join(lines) + "\n")
        check(lambda: load_gqa(root, "questions.csv"), verdict)


def gqa_reference_from_csv(rows: list[list[str]]):
    questions = [GQAQuestion(*row) for row in rows[1:]]
    return summary(build_scenegraphs("scenegraphs", read_scene_graphs(SCENES), questions))


def test_the_csv_reference_is_the_json_reference_less_what_csv_does_not_carry():
    from_csv, from_json = gqa_reference_from_csv(csv_rows()), gqa_reference()
    assert [s[:4] for s in from_csv[0]] == [s[:4] for s in from_json[0]] and from_csv[1:] == from_json[1:]


PROGRAMS = FIXTURES_DIR / "graphvqa_debug_programs.json"


@FUZZ
@given(st.data())
def test_graphvqa_programs_damage_is_refused(data):
    draw = data.draw
    rows = json.loads(PROGRAMS.read_text())
    k = draw(st.integers(0, len(rows) - 1))
    op = draw(st.sampled_from(["short", "retype id", "retype text", "duplicate", "not a list", "truncate"]))
    if op == "short":
        rows[k] = rows[k][:draw(st.integers(0, 5))]
    elif op == "retype id":
        rows[k][3] = draw(NOT_TEXT)
    elif op == "retype text":
        rows[k][draw(st.sampled_from([0, 1, 4, 5]))] = draw(NOT_TEXT)
    elif op == "duplicate":
        rows.append(list(rows[k]))
    elif op == "not a list":
        rows[k] = draw(NOT_LIST.filter(lambda v: not isinstance(v, list)))
    text = json.dumps(rows)
    if op == "truncate":
        text = text[:draw(st.integers(1, len(text) - 1))]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "programs.json").write_text(text)
        shutil.copy(FIXTURES_DIR / "graphvqa_debug_sceneGraphs.json", root / "sceneGraphs.json")
        check(lambda: load_gqa(root, "programs.json"), "error")


# ---------------------------------------------------------------- ExplaGraphs: the TSV and its split files

EXPLAGRAPHS_ROWS = 6
EXPLAGRAPHS_SPLIT = {"train": [0, 1, 2, 3], "val": [4], "test": [5]}
WHOLE_TRIPLES = re.compile(r"(\s*\([^();]*;[^();]*;[^();]*\))+\s*")


def explagraphs_lines() -> list[str]:
    return (EXPLAGRAPHS_ROOT / "train_dev.tsv").read_text().splitlines()[:EXPLAGRAPHS_ROWS + 1]


def write_explagraphs(root: Path, lines: list[str], split: dict[str, list[str]]) -> None:
    (root / "split").mkdir()
    (root / "train_dev.tsv").write_text("\n".join(lines) + "\n")
    for name, entries in split.items():
        (root / "split" / f"{name}_indices.txt").write_text("\n".join(entries) + "\n")


def load_explagraphs(lines, split):
    with tempfile.TemporaryDirectory() as folder:
        write_explagraphs(Path(folder), lines, split)
        return summary(load_dataset("explagraphs", root=folder))


@functools.lru_cache
def explagraphs_reference():
    return load_explagraphs(explagraphs_lines(), {k: [str(i) for i in v] for k, v in EXPLAGRAPHS_SPLIT.items()})


@FUZZ
@given(st.data())
def test_explagraphs_damage_is_refused_or_means_what_is_left(data):
    draw = data.draw
    lines = explagraphs_lines()
    split = {k: [str(i) for i in v] for k, v in EXPLAGRAPHS_SPLIT.items()}
    k = draw(st.integers(1, EXPLAGRAPHS_ROWS))
    op = draw(st.sampled_from(["drop field", "label", "truncate", "junk", "split twice", "split junk",
                               "split dropped", "split out of range", "split blank"]))
    verdict = "error"
    if op == "drop field":
        fields = lines[k].split("\t")
        del fields[draw(st.integers(0, 3))]
        lines[k] = "\t".join(fields)
    elif op == "label":
        fields = lines[k].split("\t")
        fields[2] = draw(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8)
                         .filter(lambda t: t not in ("support", "counter")))
        lines[k] = "\t".join(fields)
    elif op == "truncate":  # a line cut off after a whole triple still reads as a row: its graph is what is left
        lines[k] = lines[k][:draw(st.integers(1, len(lines[k]) - 1))]
        fields = lines[k].split("\t")
        if len(fields) == 4 and fields[2] in ("support", "counter") and WHOLE_TRIPLES.fullmatch(fields[3]):
            verdict = "graph cut"
    elif op == "junk":
        lines.insert(draw(st.integers(1, len(lines))), draw(JUNK))
    elif op == "split blank":
        split["train"].insert(draw(st.integers(0, 4)), "")
        verdict = explagraphs_reference()
    else:
        name = draw(st.sampled_from(sorted(split)))
        if op == "split twice":
            split[draw(st.sampled_from(sorted(split)))].append(str(draw(st.integers(0, EXPLAGRAPHS_ROWS - 1))))
        elif op == "split junk":
            split[name].append(draw(JUNK))  # digits too ("7": listed twice; "²", which str.isdigit takes)
        elif op == "split dropped":
            split[name].pop(draw(st.integers(0, len(split[name]) - 1)))
        else:
            split[name].append(str(draw(st.integers(EXPLAGRAPHS_ROWS, 10**6))))
    if verdict != "graph cut":
        check(lambda: load_explagraphs(lines, split), verdict)
        return
    # the other rows as they were; this row's arguments and label too, its graph the first triples of the original
    got, reference = load_explagraphs(lines, split), explagraphs_reference()
    assert got[1:] == reference[1:]
    assert got[0][:k - 1] + got[0][k:] == reference[0][:k - 1] + reference[0][k:]
    (*kept, graph), (*original, whole) = got[0][k - 1][:4], reference[0][k - 1][:4]
    assert kept == original and graph.edges == whole.edges[:graph.num_edges] and graph.nodes == whole.nodes[
        :graph.num_nodes]


def test_a_cut_explagraphs_line_is_refused_unless_it_ends_on_a_whole_triple():
    lines = explagraphs_lines()
    cut = lines[1][:lines[1].index(")") + 1]  # the first triple only
    lines[1] = cut
    split = {k: [str(i) for i in v] for k, v in EXPLAGRAPHS_SPLIT.items()}
    assert load_explagraphs(lines, split)[0][0][3].num_edges == 1
    lines[1] = cut[:-1]
    with pytest.raises(DatasetFormatError, match=r"row 0 of .*train_dev.tsv: no .* triple"):
        load_explagraphs(lines, split)


def test_pandas_reads_the_bundled_explagraphs_rows_as_the_fuzz_splits_them():
    table = pd.read_csv(io.StringIO("\n".join(explagraphs_lines())), sep="\t", dtype=str)
    assert table.values.tolist() == [line.split("\t") for line in explagraphs_lines()[1:]]
