"""WebQSP with RoG's retrieved subgraphs (records: id, question, answer, q_entity, a_entity, graph triples).

The data is not shipped (it is not obtainable on the machines this project was built on): point `root` at a folder
holding RoG-webqsp's splits as JSON lines or parquet, named `train*`, `validation*` and `test*`
(e.g. `train.jsonl`, or the Hugging Face layout `data/train-00000-of-00002.parquet`). Samples are the three
splits concatenated in that order, as G-Retriever does; the split is RoG's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from toporag_lib.data.dataset import DatasetFileError, QADataset
from toporag_lib.data.errors import DatasetFormatError, check_text, check_texts, named, shown
from toporag_lib.data.graph import QASample, TextualGraph

ROG_SPLITS = {"train": "train", "validation": "val", "test": "test"}
HOW_TO_GET = ("download RoG-webqsp (rmanluo/RoG-webqsp on the Hugging Face hub) on a machine that can, and copy "
              "its train/validation/test parquet or jsonl files here")
FIELDS = ("id", "question", "answer", "q_entity", "a_entity", "graph")
SUFFIXES = (".jsonl", ".json", ".parquet")
SHARD = re.compile(r"-(\d+)-of-(\d+)")  # the Hugging Face layout: train-00000-of-00002.parquet


def split_files(root: Path, split: str) -> list[Path]:
    """The files of one RoG split under `root` (searched recursively), sorted by name: `{split}.jsonl` (`.json`,
    `.parquet`), or every shard `{split}-NNNNN-of-NNNNN.parquet` (or `.jsonl`) of one complete set.

    Any other file named `{split}*` with such a suffix (`train_backup.jsonl`), two copies of one split (`train.jsonl`
    beside `data/train-00000-of-00001.parquet`) or a set of shards with one missing is refused (DatasetFormatError):
    read, it would add records to the split or leave some out.
    """
    found = sorted(p for p in root.rglob(f"{split}*") if p.suffix in SUFFIXES and p.is_file())
    if not found:
        raise DatasetFileError(f"missing dataset file {root}/{split}*.jsonl or {split}*.parquet: {HOW_TO_GET}")
    whole, shards = [], {}
    for path in found:
        tail = path.stem[len(split):]
        shard = SHARD.fullmatch(tail)
        if tail == "":
            whole.append(path)
        elif shard:
            shards.setdefault((path.parent, int(shard[2]), path.suffix), []).append((int(shard[1]), path))
        else:
            raise DatasetFormatError(f"{path}: named like a {split!r} split file but neither {split}{path.suffix} "
                                     f"nor a shard {split}-NNNNN-of-NNNNN{path.suffix}; move or rename it (read, it "
                                     f"would add its records to the {split!r} split)")
    copies = [[p] for p in whole] + [[p for _, p in sorted(s)] for s in shards.values()]
    if len(copies) > 1:
        raise DatasetFormatError(f"{root}: the {split!r} split is there {len(copies)} times "
                                 f"({'; '.join(', '.join(map(str, c)) for c in copies)}); keep one")
    for (folder, total, suffix), parts in shards.items():
        numbers = sorted(k for k, _ in parts)
        if numbers != list(range(total)):
            missing = sorted(set(range(total)) - set(numbers))
            raise DatasetFormatError(f"{folder}: the {split!r} split's {total} shards ({split}-NNNNN-of-"
                                     f"{total:05d}{suffix}) are incomplete: shard(s) {missing} missing, or numbered "
                                     f"outside 0..{total - 1} ({numbers})")
    return copies[0]


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a parquet or JSON lines file (blank lines skipped); DatasetFormatError naming the file (and
    line) when it is not one."""
    if path.suffix == ".parquet":
        try:
            table = pd.read_parquet(path)
        except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError, its IO errors OSErrors
            raise DatasetFormatError(f"{path}: not a parquet table ({err}; cut off?)") from None
        yield from table.to_dict("records")
        return
    with path.open(encoding="utf-8") as lines:
        try:
            for number, line in enumerate(lines, 1):
                if line.strip():
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as err:
                        raise DatasetFormatError(f"{path}, line {number}: not a JSON record ({err}; cut off?)") \
                            from None
                    yield record
        except UnicodeDecodeError as err:
            raise DatasetFormatError(f"{path}: not UTF-8 text ({err})") from None


def is_list(value: Any) -> bool:
    """A list (JSON's) or an array (parquet's); a string is not a list of its letters."""
    return isinstance(value, (list, tuple, np.ndarray)) and not isinstance(value, (str, bytes))


def build_graph(triples: Any, where: str) -> TextualGraph:
    """Node text lower-cased, ids by first appearance; edge text = relation as is; parallel relations kept.

    Each triple is a list of three strings (head, relation, tail): a string ("abc"), a number or `null` is refused,
    never split or printed."""
    node_ids: dict[str, int] = {}
    edges = []
    for k, triple in enumerate(triples):
        if not is_list(triple) or len(triple) != 3:
            raise DatasetFormatError(f"{where}: graph triple {k} is {shown(triple)}, expected a list "
                                     "[head, relation, tail] of strings")
        head, rel, tail = triple
        if not (type(head) is str and type(rel) is str and type(tail) is str):
            for part, name in zip(triple, TRIPLE_PARTS):
                check_text(part, where, f"graph triple {k}'s {name}")
        for name in (head.lower(), tail.lower()):
            node_ids.setdefault(name, len(node_ids))
        edges.append((node_ids[head.lower()], node_ids[tail.lower()], rel))
    parts = [part for triple in triples for part in triple]
    check_texts(parts, where, lambda i: f"graph triple {i // 3}'s {TRIPLE_PARTS[i % 3]}")
    return TextualGraph(nodes=list(node_ids), edges=edges)


LIST_FIELDS = ("answer", "q_entity", "a_entity", "graph")
TEXT_LISTS = ("answer", "q_entity", "a_entity")
TRIPLE_PARTS = ("head", "relation", "tail")


def check_record(record: Any, where: str) -> dict[str, Any]:
    """A record is an object with every field; `id` and `question` strings; the list fields lists (a string is
    refused, never split), `answer`, `q_entity` and `a_entity` of strings; every string UTF-8 text."""
    if not isinstance(record, dict):
        raise DatasetFormatError(f"{where}: a record must be a JSON object, got {type(record).__name__}")
    missing = [f for f in FIELDS if f not in record]
    if missing:
        raise DatasetFormatError(f"{where}: record lacks {missing}")
    for name in LIST_FIELDS:
        value = record[name]
        if not is_list(value):
            raise DatasetFormatError(f"{where}: field {name!r} is {type(value).__name__} {str(value)[:60]!r}, "
                                     "expected a list")
    fields = [("id", None), ("question", None)] + [(name, k) for name in TEXT_LISTS for k in range(len(record[name]))]
    values = [record[name] if k is None else record[name][k] for name, k in fields]
    check_texts(values, where, lambda i: f"field {fields[i][0]!r}" + ("" if fields[i][1] is None else
                                                                        f", item {fields[i][1]}"))
    return record


def to_sample(record: dict[str, Any], where: str) -> QASample:
    record = check_record(record, where)
    graph = build_graph(record["graph"], where)
    answers = list(record["answer"])
    a_entities = {a.lower() for a in record["a_entity"]}
    answer_nodes = [i for i, name in enumerate(graph.nodes) if name in a_entities]
    return QASample(id=record["id"], question=f"Question: {record['question']}\nAnswer: ",
                    label="|".join(answers).lower(), graph=graph,
                    meta={"query": record["question"], "answers": answers, "q_entity": list(record["q_entity"]),
                          "a_entity": list(record["a_entity"]), "answer_nodes": answer_nodes})


def load_webqsp(root: str | Path) -> QADataset:
    """RoG-webqsp from a local folder; records with an empty graph are dropped (as G-Retriever) and counted.

    Malformed content raises DatasetFormatError naming the file, record and field (see `split_files`,
    `check_record`, `build_graph`); so does an id seen twice (in two splits, or twice in one), as ExplaGraphs
    refuses a row in two splits: a record in train and test would be trained on and scored.
    """
    root = Path(root)
    if not root.is_dir():
        raise DatasetFileError(f"missing dataset folder {root}: {HOW_TO_GET}")
    samples: list[QASample] = []
    split: dict[str, list[int]] = {name: [] for name in ROG_SPLITS.values()}
    dropped: list[str] = []
    seen: dict[str, tuple[str, str]] = {}
    for rog_name, name in ROG_SPLITS.items():
        for path in split_files(root, rog_name):
            for k, record in enumerate(read_records(path)):
                where = f"{path}, record {k}" + (f" (id {named(record.get('id', '?'))})" if isinstance(record, dict)
                                                 else "")
                record = check_record(record, where)
                if record["id"] in seen:
                    other, other_split = seen[record["id"]]
                    also = "twice in it" if other_split == name else f"also in the {other_split!r} split ({other})"
                    raise DatasetFormatError(f"{where}: id {record['id']!r} of the {name!r} split is listed {also}")
                seen[record["id"]] = (where, name)
                if len(record["graph"]) == 0:
                    dropped.append(where)
                    continue
                split[name].append(len(samples))
                samples.append(to_sample(record, where))
    notes = [f"dropped (empty graph): {w}" for w in dropped]
    return QADataset("webqsp", samples, split, dropped=len(dropped), notes=notes)
