"""What every dataset loader returns: samples in file order plus named splits of sample indices."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toporag_lib.data.errors import DatasetFormatError, is_int
from toporag_lib.data.graph import QASample, TextualGraph, graph_key

SPLITS = ("train", "val", "test")


class DatasetFileError(FileNotFoundError):
    """A dataset file is missing; the message names the file and where to get it. (Malformed content raises
    `DatasetFormatError`, re-exported here.)"""


__all__ = ["SPLITS", "DatasetFileError", "DatasetFormatError", "QADataset", "read_json", "require_file"]


def require_file(path: Path, how_to_get: str) -> Path:
    """Return `path` if it exists, else raise a DatasetFileError naming it and how to obtain it."""
    path = Path(path)
    if not path.exists():
        raise DatasetFileError(f"missing dataset file {path}: {how_to_get}")
    return path


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: an object that names one key twice is refused (json keeps the last one silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise DatasetFormatError(f"key {twice!r} appears twice in one JSON object (a duplicated record?)")
    return out


def read_json(path: str | Path, how_to_get: str) -> Any:
    """Load a JSON file, raising DatasetFileError (naming the file and how to get it) when it is missing, and
    DatasetFormatError when it is not UTF-8 JSON or an object in it names a key twice."""
    path = require_file(Path(path), how_to_get)
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as err:
            raise DatasetFormatError(f"{path}: not valid JSON ({err}; truncated?)") from None
        except UnicodeDecodeError as err:
            raise DatasetFormatError(f"{path}: not UTF-8 text ({err})") from None
        except DatasetFormatError as err:
            raise DatasetFormatError(f"{path}: {err}") from None


@dataclass
class QADataset(Sequence):
    """A list of QASamples with a train/val/test split of their indices.

    `dropped` counts source items left out on purpose (as G-Retriever does, e.g. empty graphs), with the reason
    in `notes`. A split index is an integer in range, in one split at most and once (DatasetFormatError otherwise):
    a sample in both train and test would be trained on and scored.
    """

    name: str
    samples: list[QASample]
    split: dict[str, list[int]]
    dropped: int = 0
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        missing = [k for k in SPLITS if k not in self.split]
        if missing:
            raise DatasetFormatError(f"{self.name}: split lacks {missing}")
        n = len(self.samples)
        owner: dict[int, str] = {}
        for key, idx in self.split.items():
            bad = [i for i in idx if not is_int(i) or not 0 <= i < n]
            if bad:
                raise DatasetFormatError(f"{self.name}: split {key!r} has indices that are not integers in "
                                         f"0..{n - 1}: {bad[:5]}")
            for i in idx:
                if i in owner:
                    where = "twice" if owner[i] == key else f"in both {owner[i]!r} and {key!r}"
                    raise DatasetFormatError(f"{self.name}: sample {i} (id {self.samples[i].id}) is listed {where} "
                                             "in the split")
                owner[i] = key

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i):  # type: ignore[override]
        return self.samples[i]

    def __iter__(self) -> Iterator[QASample]:
        return iter(self.samples)

    @property
    def graphs(self) -> list[TextualGraph]:
        return [s.graph for s in self.samples]

    def distinct_graphs(self) -> tuple[list[int], list[int]]:
        """(sample index of each distinct graph's first question, distinct-graph index of every sample)."""
        index_of: dict[str, int] = {}
        representatives, graph_of = [], []
        for i, sample in enumerate(self.samples):
            key = graph_key(sample.graph)
            if key not in index_of:
                index_of[key] = len(representatives)
                representatives.append(i)
            graph_of.append(index_of[key])
        return representatives, graph_of

    def take(self, indices: Sequence[int]) -> QADataset:
        """A dataset of the samples at `indices` (in that order), each keeping its split."""
        split_of = {i: name for name, ids in self.split.items() for i in ids}
        split: dict[str, list[int]] = {name: [] for name in self.split}
        for new, old in enumerate(indices):
            if old in split_of:
                split[split_of[old]].append(new)
        return QADataset(self.name, [self.samples[i] for i in indices], split, self.dropped, list(self.notes))

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={len(v)}" for k, v in self.split.items())
        return f"QADataset({self.name!r}, {len(self)} samples; {sizes}; dropped={self.dropped})"
