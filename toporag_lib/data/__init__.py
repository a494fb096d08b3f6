"""Textual graphs and their question-answer datasets: `load_dataset(name, **options) -> QADataset`.

The datasets, their options, metrics and default retrieval are listed in `toporag_lib.data.registry`.
"""

from toporag_lib.data.dataset import DatasetFileError, DatasetFormatError, QADataset
from toporag_lib.data.graph import QASample, TextualGraph, textualize
from toporag_lib.data.registry import (
           DATASETS,
           correct_for,
           dataset_spec,
           load_dataset,
           metric_for,
)

__all__ = ["DATASETS", "DatasetFileError", "DatasetFormatError", "QADataset", "QASample", "TextualGraph", "correct_for",
           "dataset_spec", "load_dataset", "metric_for", "textualize"]
