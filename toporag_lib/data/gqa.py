"""SceneGraphs (GQA): official GQA scene graphs and questions -> QADataset, textualized exactly as G-Retriever.

Files read (defaults inside `root`; explicit paths override):
- `sceneGraphs.json`: GQA's scene-graph JSON, `image_id -> {width, height, objects: {obj_id: {name, x, y, w, h,
  attributes, relations: [{name, object}]}}}` (GQA ships it as `train_sceneGraphs.json` / `val_sceneGraphs.json`).
- `questions.json` (preferred) or `questions.csv`: GQA's question JSON (`qid -> {imageId, question, answer,
  fullAnswer, ...}`) or G-Retriever's `questions.csv` (`q_id,image_id,question,answer,full_answer`). A JSON list
  is read as GraphVQA's programs format (`[image_id, question, program, qid, answer, full_answer, ...]`).

Graph per image (G-Retriever's `preprocess/scene_graphs.py`): one node per object in the order of `objects`, one
edge per relation (object -> `relation['object']`, text = relation name). The split is G-Retriever's 60/20/20 by
image id, with sklearn's `train_test_split` reimplemented (see `sklearn_train_test_split`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toporag_lib.data.dataset import QADataset, read_json, require_file
from toporag_lib.data.errors import DatasetFormatError, check_text, is_number, named, shown
from toporag_lib.data.graph import QASample, TextualGraph
from toporag_lib.paths import BUNDLED_DATA

SCENE_GRAPHS_FILE = "sceneGraphs.json"
QUESTIONS_JSON_FILE = "questions.json"
QUESTIONS_CSV_FILE = "questions.csv"
CSV_COLUMNS = ("q_id", "image_id", "question", "answer", "full_answer")
SPLIT_SEED = 42

FIXTURES_DIR = BUNDLED_DATA / "gqa_fixtures"
FIXTURE_SCENE_GRAPHS = ("graphvqa_debug_sceneGraphs.json", "emma_gqa_scene_graph.json")
FIXTURE_QUESTIONS = ("emma_gqa_questions.json", "graphvqa_debug_programs.json")

GQA_SITE = "https://cs.stanford.edu/people/dorarad/gqa/download.html"
HOW_TO_GET_SCENE_GRAPHS = (
    f"download GQA's scene graphs (sceneGraphs.zip, e.g. train_sceneGraphs.json) from {GQA_SITE} and pass the "
    "file as scene_graphs=... (or name it sceneGraphs.json in root), or write synthetic ones with "
    "toporag_lib.data.testbed.loader.write_scenes(root, ...)")
HOW_TO_GET_QUESTIONS = (
    f"download GQA's questions (questions1.2.zip, e.g. train_balanced_questions.json) from {GQA_SITE}, or use "
    f"G-Retriever's {QUESTIONS_CSV_FILE} ({','.join(CSV_COLUMNS)}); pass it as questions=... (or put "
    f"{QUESTIONS_JSON_FILE} / {QUESTIONS_CSV_FILE} in root), or write synthetic ones with "
    "toporag_lib.data.testbed.loader.write_scenes(root, ...)")


@dataclass(frozen=True)
class GQAQuestion:
    """One question record, whatever file format it came from. `extra` holds the GQA JSON's other fields."""

    qid: str
    image_id: str
    question: str
    answer: str
    full_answer: str
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- reading files

def read_scene_graphs(path: str | Path) -> dict[str, dict]:
    """GQA's scene-graph JSON: image id -> scene graph (each checked when it is converted, `scene_graph_to_graph`)."""
    data = read_json(path, HOW_TO_GET_SCENE_GRAPHS)
    if not isinstance(data, dict):
        raise DatasetFormatError(f"{path}: expected a JSON object image_id -> scene graph, got {type(data).__name__}")
    return data


def read_questions(path: str | Path) -> list[GQAQuestion]:
    """Questions from G-Retriever's CSV, GQA's question JSON (an object) or GraphVQA's programs JSON (a list)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return questions_from_csv(path)
    data = read_json(path, HOW_TO_GET_QUESTIONS)
    if isinstance(data, list):
        data = programs_to_gqa_questions(data, source=str(path))
    if not isinstance(data, dict):
        raise DatasetFormatError(f"{path}: expected GQA's question JSON (qid -> question), got {type(data).__name__}")
    return questions_from_gqa_json(data, source=str(path))


def questions_from_csv(path: str | Path) -> list[GQAQuestion]:
    """G-Retriever's questions.csv, every field read as a string (question ids keep their leading zeros).

    A row with fewer or more fields than the header (a line cut off, a stray comma), a field over several lines (a
    quote never closed swallows the lines after it), malformed quoting or a question id seen before is refused
    (DatasetFormatError naming the line): csv.DictReader would fill missing fields with None."""
    path = require_file(Path(path), HOW_TO_GET_QUESTIONS)
    out, lines = [], {}
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, strict=True)
        try:
            header = next(reader, [])
            missing = [c for c in CSV_COLUMNS if c not in header]
            if missing:
                raise DatasetFormatError(f"{path}: missing columns {missing}; expected {','.join(CSV_COLUMNS)}")
            for fields in reader:
                if not fields:  # a blank line, as csv.DictReader skips it
                    continue
                where = f"{path}, line {reader.line_num}"
                if len(fields) != len(header):
                    raise DatasetFormatError(f"{where}: {len(fields)} fields, expected {len(header)} "
                                             f"({','.join(header)}); a line cut off, or a stray comma?")
                if any("\n" in v or "\r" in v for v in fields):
                    raise DatasetFormatError(f"{where}: a field runs over more than one line (a quote never "
                                             "closed?); GQA's questions and answers are one line each")
                row = dict(zip(header, fields))
                if row["q_id"] in lines:
                    raise DatasetFormatError(f"{where}: question id {row['q_id']!r} is on line {lines[row['q_id']]} "
                                             "too")
                lines[row["q_id"]] = reader.line_num
                out.append(GQAQuestion(row["q_id"], row["image_id"], row["question"], row["answer"],
                                       row["full_answer"]))
        except UnicodeDecodeError as err:
            raise DatasetFormatError(f"{path}: not UTF-8 text ({err})") from None
        except csv.Error as err:
            raise DatasetFormatError(f"{path}, line {reader.line_num}: not CSV ({err})") from None
    return out


QUESTION_TEXTS = ("imageId", "question", "answer", "fullAnswer")  # the fields read (the others kept in `extra`)


def questions_from_gqa_json(data: dict[str, dict], source: str = "questions") -> list[GQAQuestion]:
    """GQA's question JSON (qid -> {imageId, question, answer, fullAnswer, ...}) in file order.

    `imageId`, `question`, `answer` and (when present) `fullAnswer` must be strings (DatasetFormatError naming the
    file, question and field otherwise): a `null` answer is not the label "None", an image id 5 not "5"."""
    out = []
    for qid, record in data.items():
        where = f"{source}: question {named(qid)}"
        if not isinstance(record, dict):
            raise DatasetFormatError(f"{where} is {shown(record)}, expected an object")
        missing = [k for k in ("imageId", "question", "answer") if k not in record]
        if missing:
            raise DatasetFormatError(f"{where} lacks {missing}")
        for key in QUESTION_TEXTS:
            if key in record:
                check_text(record[key], where, key)
        check_text(qid, source, "a question id")
        extra = {k: v for k, v in record.items() if k not in QUESTION_TEXTS}
        out.append(GQAQuestion(qid, record["imageId"], record["question"], record["answer"],
                               record.get("fullAnswer", ""), extra))
    return out


def programs_to_gqa_questions(rows: Iterable[Sequence], source: str = "programs") -> dict[str, dict]:
    """Adapter: GraphVQA's programs list `[image_id, question, program, qid, answer, full_answer, tokens,
    annotations]` -> GQA's question JSON (the program kept under "program", annotations when present).

    A row that is not a list of at least 6 fields, a question id that is not a string or is seen before, is
    refused (DatasetFormatError naming `source` and the row)."""
    out: dict[str, dict] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) < 6:
            what = f"has {len(row)} fields" if isinstance(row, list) else f"is {shown(row)}"
            raise DatasetFormatError(f"{source}: programs row {i} {what}; expected a list of at least 6")
        image_id, question, program, qid, answer, full_answer = row[:6]
        check_text(qid, f"{source}: programs row {i}", "the question id (field 3)")
        if qid in out:
            raise DatasetFormatError(f"{source}: programs row {i}: question id {qid!r} is in an earlier row too")
        record = {"imageId": image_id, "question": question, "answer": answer, "fullAnswer": full_answer,
                  "program": program}
        if len(row) > 7 and isinstance(row[7], dict):
            record["annotations"] = row[7]
        out[qid] = record
    return out


# ---------------------------------------------------------------- graphs

def object_index(scene: dict) -> dict[str, int]:
    """Object id -> node index (the order of the scene graph's `objects`)."""
    return {str(oid): i for i, oid in enumerate(scene["objects"])}


def node_text(obj: dict, boxes: bool = True) -> str:
    """G-Retriever's node text: `name: N; attribute: a1, a2; (x,y,w,h): (x, y, w, h)` (without the box: `boxes`)."""
    text = f"name: {obj['name']}"
    if len(obj["attributes"]) > 0:
        text += "; attribute: " + ", ".join(obj["attributes"])
    return text + ("; (x,y,w,h): " + str((obj["x"], obj["y"], obj["w"], obj["h"])) if boxes else "")


BOX = ("x", "y", "w", "h")


def check_object(obj: Any, where: str, boxes: bool) -> None:
    """An object is a mapping with a string `name`, a list of string `attributes` (a string is not split into
    letters), a list `relations` and, with `boxes`, finite numbers x, y, w, h; DatasetFormatError names the field."""
    if not isinstance(obj, dict):
        raise DatasetFormatError(f"{where} is {shown(obj)}, expected an object with name, attributes, relations")
    missing = [f for f in ("name", "attributes", "relations", *(BOX if boxes else ())) if f not in obj]
    if missing:
        raise DatasetFormatError(f"{where} lacks field {missing[0]!r}")
    check_text(obj["name"], where, "'name'")
    attributes = obj["attributes"]
    if not isinstance(attributes, list):
        raise DatasetFormatError(f"{where}: 'attributes' is {shown(attributes)}, expected a list of strings")
    for k, attribute in enumerate(attributes):
        check_text(attribute, where, f"attribute {k}")
    if not isinstance(obj["relations"], list):
        raise DatasetFormatError(f"{where}'s 'relations' is a {type(obj['relations']).__name__}, expected a list")
    for key in BOX if boxes else ():
        if not is_number(obj[key]) or not math.isfinite(obj[key]):
            raise DatasetFormatError(f"{where}: {key!r} is {shown(obj[key])}, expected a finite number")


def scene_graph_to_graph(image_id: str, scene: dict, boxes: bool = True, source: str = "") -> TextualGraph:
    """One image's scene graph as G-Retriever textualizes it.

    Malformed content (`check_object`; a relation without a string name or a string object id, or to an unknown
    object) raises DatasetFormatError naming `source` (the file), the image, the object and the field."""
    where = f"{source}, image {named(image_id)}" if source else f"image {named(image_id)}"
    if not isinstance(scene, dict) or "objects" not in scene:
        raise DatasetFormatError(f"{where}: scene graph has no 'objects'")
    if not isinstance(scene["objects"], dict):
        raise DatasetFormatError(f"{where}: 'objects' is a {type(scene['objects']).__name__}, expected an object "
                                 "id -> object mapping")
    index = object_index(scene)
    nodes, edges = [], []
    for oid, obj in scene["objects"].items():
        check_object(obj, f"{where}: object {named(oid)}", boxes)
        nodes.append(node_text(obj, boxes))
        for k, rel in enumerate(obj["relations"]):
            at = f"{where}: object {named(oid)}, relation {k}"
            lacking = [f for f in ("name", "object") if not isinstance(rel, dict) or f not in rel]
            if lacking:
                raise DatasetFormatError(f"{at} lacks {lacking}: {rel!r}")
            check_text(rel["name"], at, "'name'")
            check_text(rel["object"], at, "'object' (an object id)")
            dst = index.get(rel["object"])
            if dst is None:
                raise DatasetFormatError(f"{where}: object {named(oid)} has relation {rel['name']!r} to unknown "
                                         f"object {rel['object']}")
            edges.append((index[str(oid)], dst, rel["name"]))
    return TextualGraph(nodes, edges)


def annotated_nodes(annotation: dict[str, str], index: dict[str, int]) -> list[int]:
    """Node indices of the object ids in a GQA annotation (span -> id, or comma-separated ids), in order.

    Ids that are not in the scene graph are skipped: these lists are diagnostics, not part of the graph.
    """
    nodes: list[int] = []
    for value in annotation.values():
        for oid in str(value).split(","):
            node = index.get(oid.strip())
            if node is not None and node not in nodes:
                nodes.append(node)
    return nodes


# ---------------------------------------------------------------- split

def sklearn_train_test_split(n: int, test_size: float, random_state: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """Positions (train, test) that sklearn's `train_test_split(range(n), test_size=..., random_state=...)` picks.

    sklearn (1.x) runs `ShuffleSplit`: n_test = ceil(test_size * n), n_train = n - n_test,
    permutation = RandomState(random_state).permutation(n), test = permutation[:n_test],
    train = permutation[n_test:n_test + n_train]. Unlike sklearn this does not raise when train comes out
    empty (n <= 1): it returns the empty split.
    """
    n_test = math.ceil(test_size * n)
    permutation = np.random.RandomState(random_state).permutation(n)
    return permutation[n_test:], permutation[:n_test]


def split_image_ids(image_ids: Sequence[str], seed: int = SPLIT_SEED) -> dict[str, str]:
    """G-Retriever's 60/20/20 split of unique image ids (in order of first appearance): image id -> split name.

    `np.random.seed(42); np.random.permutation(ids)` (done here with a private RandomState(42), which draws the
    same numbers), then `train_test_split(test_size=0.4, random_state=42)`, then the held-out part with
    `test_size=0.5` (val first, test second).
    """
    shuffled = [image_ids[i] for i in np.random.RandomState(seed).permutation(len(image_ids))]
    train, rest = sklearn_train_test_split(len(shuffled), 0.4, seed)
    val, test = sklearn_train_test_split(len(rest), 0.5, seed)
    assignment = {shuffled[i]: "train" for i in train}
    assignment.update({shuffled[rest[i]]: "val" for i in val})
    assignment.update({shuffled[rest[i]]: "test" for i in test})
    return assignment


# ---------------------------------------------------------------- dataset

def question_meta(q: GQAQuestion, index: dict[str, int]) -> dict[str, Any]:
    """A sample's meta: the raw question (the retrieval query), image id, full answer, GQA's question types, and the
    annotated objects as node indices."""
    meta: dict[str, Any] = {"query": q.question, "image_id": q.image_id, "full_answer": q.full_answer}
    if "types" in q.extra:
        meta["types"] = q.extra["types"]
    annotations = q.extra.get("annotations")
    if isinstance(annotations, dict):
        meta["answer_nodes"] = annotated_nodes(annotations.get("answer", {}), index)
        meta["question_nodes"] = annotated_nodes(annotations.get("question", {}), index)
    return meta


def _drop_note(count: int, reason: str, image_ids: list[str]) -> str:
    shown = ", ".join(image_ids[:5]) + (", ..." if len(image_ids) > 5 else "")
    return f"dropped {count} question(s) {reason} (image ids {shown})"


def build_scenegraphs(name: str, scene_graphs: dict[str, dict], questions: Sequence[GQAQuestion],
                      boxes: bool = True, image_splits: dict[str, str] | None = None,
                      source: str | dict[str, str] = "") -> QADataset:
    """Questions + scene graphs -> QADataset (graphs built once per image, shared by its questions).

    Questions whose image has no scene graph, or an empty one, are dropped and reported in `dropped`/`notes`.
    The split is computed over the image ids of all questions (as G-Retriever does), then applied to the kept
    samples; `image_splits` (image id -> split name) gives it instead. `source` names the scene-graph file in
    errors (or maps image id -> file). A question id given twice is refused (DatasetFormatError).
    """
    first: dict[str, GQAQuestion] = {}
    for q in questions:
        if q.qid in first:
            raise DatasetFormatError(f"question id {q.qid!r} is given twice (images {first[q.qid].image_id} and "
                                     f"{q.image_id}); question ids must be unique")
        first[q.qid] = q
    assignment = image_splits or split_image_ids(list(dict.fromkeys(q.image_id for q in questions)))
    graphs: dict[str, tuple[TextualGraph, dict[str, int]]] = {}
    samples: list[QASample] = []
    split: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    unknown: list[str] = []
    empty: list[str] = []
    for q in questions:
        scene = scene_graphs.get(q.image_id)
        if scene is None:
            unknown.append(q.image_id)
            continue
        if q.image_id not in graphs:
            where = source.get(q.image_id, "") if isinstance(source, dict) else source
            graphs[q.image_id] = (scene_graph_to_graph(q.image_id, scene, boxes, where), object_index(scene))
        graph, index = graphs[q.image_id]
        if graph.num_nodes == 0:
            empty.append(q.image_id)
            continue
        split[assignment[q.image_id]].append(len(samples))
        samples.append(QASample(q.qid, f"Question: {q.question}\n\nAnswer:", q.answer, graph,
                                question_meta(q, index)))
    notes = []
    if unknown:
        notes.append(_drop_note(len(unknown), "whose image has no scene graph", list(dict.fromkeys(unknown))))
    if empty:
        notes.append(_drop_note(len(empty), "whose scene graph is empty (G-Retriever skips empty graphs)",
                                list(dict.fromkeys(empty))))
    return QADataset(name, samples, split, dropped=len(unknown) + len(empty), notes=notes)


def default_questions_path(root: Path) -> Path:
    """`root/questions.json` if present, else `root/questions.csv` (DatasetFileError when neither is there)."""
    json_path, csv_path = root / QUESTIONS_JSON_FILE, root / QUESTIONS_CSV_FILE
    if csv_path.exists() and not json_path.exists():
        return csv_path
    return require_file(json_path, f"neither it nor {csv_path} exists; {HOW_TO_GET_QUESTIONS}")


def load_scenegraphs(root: str | Path, questions: str | Path | None = None,
                     scene_graphs: str | Path | None = None) -> QADataset:
    """The SceneGraphs dataset from `root` (default files `sceneGraphs.json`, `questions.json`/`questions.csv`)."""
    root = Path(root)
    scene_path = scene_graphs if scene_graphs is not None else root / SCENE_GRAPHS_FILE
    scenes = read_scene_graphs(scene_path)
    records = read_questions(questions if questions is not None else default_questions_path(root))
    return build_scenegraphs("scenegraphs", scenes, records, source=str(scene_path))


def merge_scene_graphs(*parts: dict[str, dict]) -> dict[str, dict]:
    """Union of scene-graph files; DatasetFormatError if one image id has two different graphs."""
    merged: dict[str, dict] = {}
    for part in parts:
        for image_id, scene in part.items():
            if image_id in merged and merged[image_id] != scene:
                raise DatasetFormatError(f"image {image_id} has two different scene graphs")
            merged[image_id] = scene
    return merged


def load_gqa_fixtures() -> QADataset:
    """The bundled real GQA fixtures: 7 scene graphs, 11 questions (5 about images not here: dropped)."""
    root = FIXTURES_DIR
    files = {f: read_scene_graphs(root / f) for f in FIXTURE_SCENE_GRAPHS}
    scenes = merge_scene_graphs(*files.values())
    source = {image_id: str(root / f) for f, part in reversed(files.items()) for image_id in part}
    records = [q for f in FIXTURE_QUESTIONS for q in read_questions(root / f)]
    return build_scenegraphs("gqa_fixtures", scenes, records, source=source)
