"""ExplaGraphs (commonsense stance with explanation graphs), in G-Retriever's layout and split.

The project ships `train_dev.tsv` and G-Retriever's split files under `toporag_lib/data/bundled/explagraphs/`
(MIT; see ATTRIBUTION.md there). G-Retriever uses the whole graph for every question (no retrieval).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from toporag_lib.data.dataset import SPLITS, QADataset, require_file
from toporag_lib.data.errors import DatasetFormatError
from toporag_lib.data.graph import QASample, TextualGraph
from toporag_lib.paths import BUNDLED_DATA

BUNDLED_ROOT = BUNDLED_DATA / "explagraphs"
PROMPT = ("Question: Do argument 1 and argument 2 support or counter each other? "
          "Answer in one word in the form of 'support' or 'counter'.\n\nAnswer:")
TRIPLE = re.compile(r"\((.*?)\)")
COLUMNS = ("arg1", "arg2", "label", "graph")
HOW_TO_GET = ("the project ships it under toporag_lib/data/bundled/explagraphs/; otherwise take train_dev.tsv and "
              "split/*_indices.txt from G-Retriever's dataset/expla_graphs")


class GraphParseError(DatasetFormatError):
    """An ExplaGraphs graph string that does not parse into (head; relation; tail) triples."""


def parse_graph(graph: str, row: int | str = "?") -> TextualGraph:
    """Parse `(head; relation; tail)(...)` into a TextualGraph exactly as G-Retriever does.

    Node text lower-cased and stripped, node ids in order of first appearance; edge text lower-cased, stripped.
    """
    triples = TRIPLE.findall(graph)
    if not triples:
        raise GraphParseError(f"ExplaGraphs row {row}: no '(head; relation; tail)' triple in {graph!r}")
    leftover = TRIPLE.sub("", graph).strip()
    if leftover or graph.count("(") != graph.count(")"):
        raise GraphParseError(f"ExplaGraphs row {row}: graph {graph!r} is not a sequence of whole "
                              f"'(head; relation; tail)' triples (left over: {leftover!r}; cut off mid-triple?)")
    node_ids: dict[str, int] = {}
    edges = []
    for triple in triples:
        parts = triple.split(";")
        if len(parts) != 3:
            raise GraphParseError(f"ExplaGraphs row {row}: triple {triple!r} has {len(parts)} ';'-separated "
                                  "parts, expected 3")
        src, rel, dst = (p.lower().strip() for p in parts)
        for name in (src, dst):
            node_ids.setdefault(name, len(node_ids))
        edges.append((node_ids[src], node_ids[dst], rel))
    return TextualGraph(nodes=list(node_ids), edges=edges)


def question_text(arg1: str, arg2: str) -> str:
    return f"Argument 1: {arg1}\nArgument 2: {arg2}\n{PROMPT}"


def read_split(root: Path, num_rows: int) -> dict[str, list[int]]:
    """The split files' row indices: integers in range, no row twice, no row in two splits, every row in one
    (a row in none would be loaded and never used: the table and the split files do not belong together)."""
    split: dict[str, list[int]] = {}
    owner: dict[int, str] = {}
    for name in SPLITS:
        path = require_file(root / "split" / f"{name}_indices.txt", HOW_TO_GET)
        split[name] = []
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            if not re.fullmatch(r"[0-9]+", line.strip()) or int(line) >= num_rows:  # str.isdigit takes "²"
                raise DatasetFormatError(f"{path}, line {number}: {line!r} is not a row index of train_dev.tsv "
                                         f"(0 to {num_rows - 1})")
            index = int(line)
            if index in owner:
                where = "twice" if owner[index] == name else f"also in the {owner[index]} split"
                raise DatasetFormatError(f"{path}, line {number}: row {index} is listed {where}")
            owner[index] = name
            split[name].append(index)
    unlisted = sorted(set(range(num_rows)) - set(owner))
    if unlisted:
        raise DatasetFormatError(f"{root / 'train_dev.tsv'}: {len(unlisted)} row(s) in no split file (rows "
                                 f"{unlisted[:5]}{', ...' if len(unlisted) > 5 else ''}); the split files list "
                                 f"{len(owner)} of its {num_rows} rows")
    return split


def load_explagraphs(root: str | Path | None = None) -> QADataset:
    """The 2,766 ExplaGraphs samples in file order, with G-Retriever's 1,659 / 553 / 554 split.

    Malformed content (an empty or missing field, an unknown label, a graph that is not whole triples, split files
    that overlap, point nowhere or leave a row out) raises DatasetFormatError naming the file, row and field."""
    root = Path(root) if root is not None else BUNDLED_ROOT
    path = require_file(root / "train_dev.tsv", HOW_TO_GET)
    try:
        table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise DatasetFormatError(f"{path}: not a tab-separated table of arg1, arg2, label, graph ({err})") from err
    missing = {"arg1", "arg2", "label", "graph"} - set(table.columns)
    if missing:
        raise DatasetFormatError(f"{path}: missing columns {sorted(missing)}")
    samples = []
    for row in table.itertuples():
        for column in COLUMNS:  # pandas fills the fields a short line lacks with ""
            if not getattr(row, column).strip():
                raise DatasetFormatError(f"{path}, row {row.Index}: field {column!r} is empty (a line cut off?)")
        if row.label not in ("support", "counter"):
            raise DatasetFormatError(f"{path}, row {row.Index}: label {row.label!r} is neither 'support' nor "
                                     "'counter'")
        graph = parse_graph(row.graph, row=f"{row.Index} of {path}")
        samples.append(QASample(id=str(row.Index), question=question_text(row.arg1, row.arg2),
                                label=row.label, graph=graph))
    return QADataset("explagraphs", samples, read_split(root, len(samples)))
