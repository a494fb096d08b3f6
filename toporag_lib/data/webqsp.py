"""WebQSP with RoG's retrieved subgraphs (records: id, question, answer, q_entity, a_entity, graph triples).

The data is not shipped (it is not obtainable on the machines this project was built on): point `root` at a folder
holding RoG-webqsp's splits as JSON lines or parquet, named `train*`, `validation*` and `test*`
(e.g. `train.jsonl`, or the Hugging Face layout `data/train-00000-of-00002.parquet`). Samples are the three
splits concatenated in that order, as G-Retriever does; the split is RoG's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from toporag_lib.data.dataset import DatasetFileError, QADataset
from toporag_lib.data.graph import QASample, TextualGraph

ROG_SPLITS = {"train": "train", "validation": "val", "test": "test"}
HOW_TO_GET = ("download RoG-webqsp (rmanluo/RoG-webqsp on the Hugging Face hub) on a machine that can, and copy "
              "its train/validation/test parquet or jsonl files here")
FIELDS = ("id", "question", "answer", "q_entity", "a_entity", "graph")


def split_files(root: Path, split: str) -> list[Path]:
    """The files of one RoG split under `root` (searched recursively), sorted by name."""
    files = sorted(p for p in root.rglob(f"{split}*") if p.suffix in (".jsonl", ".json", ".parquet"))
    if not files:
        raise DatasetFileError(f"missing dataset file {root}/{split}*.jsonl or {split}*.parquet: {HOW_TO_GET}")
    return files


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    if path.suffix == ".parquet":
        yield from pd.read_parquet(path).to_dict("records")
        return
    with path.open() as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}, line {number}: not a JSON record ({err})") from None


def build_graph(triples: Any, where: str) -> TextualGraph:
    """Node text lower-cased, ids by first appearance; edge text = relation as is; parallel relations kept."""
    node_ids: dict[str, int] = {}
    edges = []
    for k, triple in enumerate(triples):
        triple = list(triple)
        if len(triple) != 3:
            raise ValueError(f"{where}: graph triple {k} is {triple!r}, expected [head, relation, tail]")
        head, rel, tail = (str(x) for x in triple)
        for name in (head.lower(), tail.lower()):
            node_ids.setdefault(name, len(node_ids))
        edges.append((node_ids[head.lower()], node_ids[tail.lower()], rel))
    return TextualGraph(nodes=list(node_ids), edges=edges)


LIST_FIELDS = ("answer", "q_entity", "a_entity", "graph")


def check_record(record: Any, where: str) -> dict[str, Any]:
    """A record is an object with every field; the list fields are lists (a string is refused, never split)."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: a record must be a JSON object, got {type(record).__name__}")
    missing = [f for f in FIELDS if f not in record]
    if missing:
        raise ValueError(f"{where}: record lacks {missing}")
    for name in LIST_FIELDS:
        value = record[name]
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray)):
            raise ValueError(f"{where}: field {name!r} is {type(value).__name__} {str(value)[:60]!r}, expected a "
                             "list")
    return record


def to_sample(record: dict[str, Any], where: str) -> QASample:
    record = check_record(record, where)
    graph = build_graph(record["graph"], where)
    answers = [str(a) for a in record["answer"]]
    a_entities = {str(a).lower() for a in record["a_entity"]}
    answer_nodes = [i for i, name in enumerate(graph.nodes) if name in a_entities]
    return QASample(id=str(record["id"]), question=f"Question: {record['question']}\nAnswer: ",
                    label="|".join(answers).lower(), graph=graph,
                    meta={"query": str(record["question"]), "answers": answers, "q_entity": list(record["q_entity"]),
                          "a_entity": list(record["a_entity"]), "answer_nodes": answer_nodes})


def load_webqsp(root: str | Path) -> QADataset:
    """RoG-webqsp from a local folder; records with an empty graph are dropped (as G-Retriever) and counted."""
    root = Path(root)
    if not root.is_dir():
        raise DatasetFileError(f"missing dataset folder {root}: {HOW_TO_GET}")
    samples: list[QASample] = []
    split: dict[str, list[int]] = {name: [] for name in ROG_SPLITS.values()}
    dropped: list[str] = []
    for rog_name, name in ROG_SPLITS.items():
        for path in split_files(root, rog_name):
            for k, record in enumerate(read_records(path)):
                where = f"{path}, record {k}" + (f" (id {record.get('id', '?')})" if isinstance(record, dict) else "")
                if len(check_record(record, where)["graph"]) == 0:
                    dropped.append(where)
                    continue
                split[name].append(len(samples))
                samples.append(to_sample(record, where))
    notes = [f"dropped (empty graph): {w}" for w in dropped]
    return QADataset("webqsp", samples, split, dropped=len(dropped), notes=notes)
