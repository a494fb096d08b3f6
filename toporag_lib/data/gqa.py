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
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toporag_lib.data.dataset import QADataset, require_file
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

def read_json(path: str | Path, how_to_get: str) -> Any:
    """Load a JSON file, raising DatasetFileError (naming the file and how to get it) when it is missing."""
    path = require_file(Path(path), how_to_get)
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid JSON ({err}; truncated?)") from None


def read_scene_graphs(path: str | Path) -> dict[str, dict]:
    """GQA's scene-graph JSON: image id -> scene graph."""
    data = read_json(path, HOW_TO_GET_SCENE_GRAPHS)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object image_id -> scene graph, got {type(data).__name__}")
    return data


def read_questions(path: str | Path) -> list[GQAQuestion]:
    """Questions from G-Retriever's CSV, GQA's question JSON (an object) or GraphVQA's programs JSON (a list)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return questions_from_csv(path)
    data = read_json(path, HOW_TO_GET_QUESTIONS)
    if isinstance(data, list):
        data = programs_to_gqa_questions(data)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected GQA's question JSON (qid -> question), got {type(data).__name__}")
    return questions_from_gqa_json(data, source=str(path))


def questions_from_csv(path: str | Path) -> list[GQAQuestion]:
    """G-Retriever's questions.csv, every field read as a string (question ids keep their leading zeros)."""
    path = require_file(Path(path), HOW_TO_GET_QUESTIONS)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing columns {missing}; expected {','.join(CSV_COLUMNS)}")
        return [GQAQuestion(r["q_id"], r["image_id"], r["question"], r["answer"], r["full_answer"])
                for r in reader]


def questions_from_gqa_json(data: dict[str, dict], source: str = "questions") -> list[GQAQuestion]:
    """GQA's question JSON (qid -> {imageId, question, answer, fullAnswer, ...}) in file order."""
    out = []
    for qid, record in data.items():
        missing = [k for k in ("imageId", "question", "answer") if k not in record]
        if missing:
            raise ValueError(f"{source}: question {qid} lacks {missing}")
        extra = {k: v for k, v in record.items() if k not in ("imageId", "question", "answer", "fullAnswer")}
        out.append(GQAQuestion(str(qid), str(record["imageId"]), record["question"], record["answer"],
                               record.get("fullAnswer", ""), extra))
    return out


def programs_to_gqa_questions(rows: Iterable[Sequence]) -> dict[str, dict]:
    """Adapter: GraphVQA's programs list `[image_id, question, program, qid, answer, full_answer, tokens,
    annotations]` -> GQA's question JSON (the program kept under "program", annotations when present)."""
    out: dict[str, dict] = {}
    for i, row in enumerate(rows):
        if len(row) < 6:
            raise ValueError(f"programs row {i} has {len(row)} fields; expected at least 6")
        image_id, question, program, qid, answer, full_answer = row[:6]
        record = {"imageId": image_id, "question": question, "answer": answer, "fullAnswer": full_answer,
                  "program": program}
        if len(row) > 7 and isinstance(row[7], dict):
            record["annotations"] = row[7]
        out[str(qid)] = record
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


def scene_graph_to_graph(image_id: str, scene: dict, boxes: bool = True) -> TextualGraph:
    """One image's scene graph as G-Retriever textualizes it; ValueError on a relation to an unknown object."""
    if not isinstance(scene, dict) or "objects" not in scene:
        raise ValueError(f"image {image_id}: scene graph has no 'objects'")
    if not isinstance(scene["objects"], dict):
        raise ValueError(f"image {image_id}: 'objects' is a {type(scene['objects']).__name__}, expected an object "
                         "id -> object mapping")
    index = object_index(scene)
    nodes, edges = [], []
    for oid, obj in scene["objects"].items():
        try:
            nodes.append(node_text(obj, boxes))
            relations = obj["relations"]
        except KeyError as err:
            raise ValueError(f"image {image_id}: object {oid} lacks field {err}") from None
        except TypeError:
            raise ValueError(f"image {image_id}: object {oid} is a {type(obj).__name__}, expected an object with "
                             "name, attributes, relations") from None
        if not isinstance(relations, list):
            raise ValueError(f"image {image_id}: object {oid}'s 'relations' is a {type(relations).__name__}, "
                             "expected a list")
        for k, rel in enumerate(relations):
            lacking = [f for f in ("name", "object") if not isinstance(rel, dict) or f not in rel]
            if lacking:
                raise ValueError(f"image {image_id}: object {oid}, relation {k} lacks {lacking}: {rel!r}")
            dst = index.get(str(rel["object"]))
            if dst is None:
                raise ValueError(f"image {image_id}: object {oid} has relation {rel['name']!r} to unknown "
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
                      boxes: bool = True, image_splits: dict[str, str] | None = None) -> QADataset:
    """Questions + scene graphs -> QADataset (graphs built once per image, shared by its questions).

    Questions whose image has no scene graph, or an empty one, are dropped and reported in `dropped`/`notes`.
    The split is computed over the image ids of all questions (as G-Retriever does), then applied to the kept
    samples; `image_splits` (image id -> split name) gives it instead.
    """
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
            graphs[q.image_id] = (scene_graph_to_graph(q.image_id, scene, boxes), object_index(scene))
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
    scenes = read_scene_graphs(scene_graphs if scene_graphs is not None else root / SCENE_GRAPHS_FILE)
    records = read_questions(questions if questions is not None else default_questions_path(root))
    return build_scenegraphs("scenegraphs", scenes, records)


def merge_scene_graphs(*parts: dict[str, dict]) -> dict[str, dict]:
    """Union of scene-graph files; ValueError if one image id has two different graphs."""
    merged: dict[str, dict] = {}
    for part in parts:
        for image_id, scene in part.items():
            if image_id in merged and merged[image_id] != scene:
                raise ValueError(f"image {image_id} has two different scene graphs")
            merged[image_id] = scene
    return merged


def load_gqa_fixtures() -> QADataset:
    """The bundled real GQA fixtures: 7 scene graphs, 11 questions (5 about images not here: dropped)."""
    scenes = merge_scene_graphs(*(read_scene_graphs(FIXTURES_DIR / f) for f in FIXTURE_SCENE_GRAPHS))
    records = [q for f in FIXTURE_QUESTIONS for q in read_questions(FIXTURES_DIR / f)]
    return build_scenegraphs("gqa_fixtures", scenes, records)
